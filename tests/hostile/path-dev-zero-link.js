// title: Read a link to /dev/zero
// expect: result "path-escape"
// setup: dev-links

try { await cat('zero') } catch (e) { e.kind || e.name }
