// title: a cyclic tool input
// expect: error /not JSON-serializable/
// setup: files

const c = { file_path: 'a.txt' }; c.c = c
await Read(c)
