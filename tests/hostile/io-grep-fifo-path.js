// title: Grep of a named pipe is refused
// expect: result-matches /^invalid-input/
// setup: fifo

try { await rgf('alpha', { path: 'pipe' }) } catch (e) { e.kind }
