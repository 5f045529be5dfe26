// title: Grep of a root with a link to itself terminates
// expect: result 1
// setup: symlink-loop files

(await rgf('alpha')).length
