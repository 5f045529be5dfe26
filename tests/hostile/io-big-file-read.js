// title: Read of a 40 MiB file
// expect: result-matches /invalid-input|too-large|limit/
// setup: big-file

try { await cat('big.txt') } catch (e) { e.kind + ': ' + e.message }
