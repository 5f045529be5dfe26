// title: a tool input nested 10000 levels deep
// expect: error /RangeError|nests more than 128 levels/
// setup: files

let deep = []
for (let i = 0; i < 10000; i++) deep = [deep]
await Read({ file_path: 'a.txt', x: deep })
