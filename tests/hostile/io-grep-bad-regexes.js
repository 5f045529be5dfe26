// title: Grep with invalid or oversized regexes
// expect: result true
// timeout: 5000
// setup: files

const out = []
for (const p of ['(', 'a{1000}{1000}{1000}', '\\p{Nope}', '[z-a]']) { try { await rg(p); out.push('ran') } catch (e) { out.push(e.kind) } }
out.every(k => k === 'invalid-input') || out
