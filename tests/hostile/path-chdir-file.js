// title: chdir into a file
// expect: result "invalid-input"
// setup: files

try { await chdir('a.txt') } catch (e) { e.kind || e.name }
