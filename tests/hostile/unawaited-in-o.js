// title: o holds a pending Read that is deep-resolved
// expect: result {"x": "alpha\n"}
// setup: files

o.x = cat('a.txt')
undefined
