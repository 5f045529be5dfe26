// title: Read a symlinked file outside
// expect: result "path-escape"
// setup: symlink-escape

try { await cat('leak.txt') } catch (e) { e.kind || e.name }
