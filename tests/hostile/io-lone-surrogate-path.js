// title: a tool input with a lone surrogate
// expect: result-matches /invalid-input|not-found/

try { await cat('\ud800.txt') } catch (e) { e.kind }
