// title: Read through sub/../../
// expect: result "path-escape"
// setup: files

try { await cat('sub/../../outside/canary.txt') } catch (e) { e.kind || e.name }
