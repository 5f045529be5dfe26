// title: Grep with a path of ..
// expect: result "path-escape"

try { await rg('TOP SECRET', { path: '..' }) } catch (e) { e.kind || e.name }
