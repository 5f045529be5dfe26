// title: a tool input nested 200 levels deep is refused with the nesting limit, not "invalid JSON"
// expect: result-matches /^invalid-input: the input of Read nests more than 128 levels/
// setup: files

let deep = []
for (let i = 0; i < 200; i++) deep = [deep]
try { await Read({ file_path: 'a.txt', x: deep }); 'ran' } catch (e) { e.kind + ': ' + e.message }
