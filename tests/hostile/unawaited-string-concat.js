// title: a Promise used in string concatenation
// expect: error /UnawaitedPromiseError/
// setup: files

'value: ' + cat('a.txt')
