// title: Read an absolute path outside
// expect: result "path-escape"

try { await cat('{{OUTSIDE}}/canary.txt') } catch (e) { e.kind || e.name }
