// title: a 200k-character path
// expect: result-matches /not-found|invalid-input|io|path/

try { await cat('d/'.repeat(100000) + 'x') } catch (e) { e.kind || e.name }
