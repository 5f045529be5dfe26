// title: an unawaited Read at the end
// expect: result "done"
// setup: files

cat('a.txt')
'done'
