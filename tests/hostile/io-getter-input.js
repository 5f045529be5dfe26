// title: a tool input with a throwing getter
// expect: error /not JSON-serializable|getter/
// setup: files

await Read({ file_path: 'a.txt', get boom() { throw new Error('getter') } })
