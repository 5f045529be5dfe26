// title: a tool input nested 10000 levels deep
// expect: error /RangeError|TypeError|invalid|not valid JSON/
// setup: files

let deep = []
for (let i = 0; i < 10000; i++) deep = [deep]
await Read({ file_path: 'a.txt', x: deep })
