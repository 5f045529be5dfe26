// title: chdir into sub then Read ../../
// expect: result "path-escape"
// setup: files

try { await chdir('sub'); await cat('../../outside/canary.txt') } catch (e) { e.kind || e.name }
