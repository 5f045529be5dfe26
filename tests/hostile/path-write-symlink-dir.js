// title: Write through a symlinked directory
// expect: result "path-escape"
// tools: Write
// setup: symlink-escape

try { await put('link/new.txt', 'pwned') } catch (e) { e.kind || e.name }
