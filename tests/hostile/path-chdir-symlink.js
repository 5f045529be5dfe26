// title: chdir into a symlinked directory
// expect: result "path-escape"
// setup: symlink-escape

try { await chdir('link') } catch (e) { e.kind || e.name }
