// title: non-object tool inputs
// expect: result ["invalid-input", "invalid-input", "invalid-input", "invalid-input", "TypeError"]

const out = []
for (const v of ['a.txt', [1, 2], null, Symbol('s'), 10n]) { try { await Read(v); out.push('ran') } catch (e) { out.push(e.kind || e.name) } }
out
