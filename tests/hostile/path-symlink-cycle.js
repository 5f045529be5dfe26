// title: Read a cycle of links
// expect: result-matches /^(path-escape|io|not-found|invalid-input)$/
// setup: symlink-loop

try { await cat('cyc1') } catch (e) { e.kind || e.name }
