// title: a path with a NUL byte
// expect: result "invalid-input"
// setup: files

try { await cat('a.txt\0/../../outside/canary.txt') } catch (e) { e.kind || e.name }
