// title: a 20-million-character string through TextEncoder and URLSearchParams fails with a RangeError (the natives count their working memory against the heap) or QuickJS's out-of-memory error, never a trap
// expect: result-matches /^(RangeError|InternalError)$/

const big = 'é'.repeat(20 << 20)
try { new TextEncoder().encode(big); new URLSearchParams({ a: big }).toString(); 'fine' } catch (e) { e.name }
