// title: Glob with a path of ..
// expect: result "path-escape"

try { await gl('**/*', { path: '..' }) } catch (e) { e.kind || e.name }
