// title: Glob of a root with a link to itself terminates
// expect: result 2
// setup: symlink-loop files

(await gl('**/*')).length
