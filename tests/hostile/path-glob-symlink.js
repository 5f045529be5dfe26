// title: Glob through a symlinked directory
// expect: result "path-escape"
// setup: symlink-escape

try { await gl('**/*', { path: 'link' }) } catch (e) { e.kind || e.name }
