// title: a tool input nested 10000 levels deep
// expect: error /RangeError|TypeError|invalid/
// setup: files
// known-bug: JSON.stringify of a deeply nested tool input exhausts the guest's native stack (a trap): the context is killed instead of a catchable error

let deep = []
for (let i = 0; i < 10000; i++) deep = [deep]
await Read({ file_path: 'a.txt', x: deep })
