// title: chdir('..')
// expect: result "path-escape"

try { await chdir('..') } catch (e) { e.kind || e.name }
