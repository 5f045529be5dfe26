// title: a __proto__ key in a tool input
// expect: result "no leak"
// setup: files

const i = JSON.parse('{"__proto__": {"file_path": "../outside/canary.txt"}, "file_path": "a.txt"}')
const r = await Read(i).catch(e => e.kind)
JSON.stringify(r).includes('must never') ? 'LEAK' : 'no leak'
