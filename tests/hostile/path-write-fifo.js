// title: Write to a named pipe
// expect: result "invalid-input"
// tools: Write
// setup: fifo

try { await put('pipe', 'x') } catch (e) { e.kind || e.name }
