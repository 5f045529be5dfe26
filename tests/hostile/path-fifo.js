// title: Read a named pipe
// expect: result-matches /invalid-input|io/
// setup: fifo

try { await cat('pipe') } catch (e) { e.kind || e.name }
