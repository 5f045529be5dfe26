// title: a 20 MiB Grep pattern
// expect: result-matches /invalid-input|failed|error|too/
// timeout: 10000

try { await rg('x'.repeat(20 << 20)) } catch (e) { e.kind }
