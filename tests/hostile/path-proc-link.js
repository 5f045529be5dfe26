// title: Read through a link to /proc/self
// expect: result "path-escape"
// setup: dev-links

try { await cat('proc/environ') } catch (e) { e.kind || e.name }
