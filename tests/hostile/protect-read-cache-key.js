// title: steal the compile cache's MAC key to sign a forged artifact later
// expect: result "protected"
// setup: protected-state

try { await cat('cache/cache.key') } catch (e) { e.kind || e.name }
