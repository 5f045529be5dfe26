// title: Grep a symlinked file
// expect: result "path-escape"
// setup: symlink-escape

try { await rg('canary', { path: 'leak.txt' }) } catch (e) { e.kind || e.name }
