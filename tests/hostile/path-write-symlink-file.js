// title: Write a symlinked file pointing outside
// expect: result "path-escape"
// tools: Write
// setup: symlink-escape

try { await put('leak.txt', 'pwned') } catch (e) { e.kind || e.name }
