// title: a tool input whose toJSON never returns
// expect: timeout
// timeout: 300
// setup: files

await Read({ file_path: 'a.txt', toJSON() { while (true) {} } })
