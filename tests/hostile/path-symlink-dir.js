// title: Read through a symlinked directory
// expect: result "path-escape"
// setup: symlink-escape

try { await cat('link/canary.txt') } catch (e) { e.kind || e.name }
