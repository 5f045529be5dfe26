// title: Glob with pathological patterns
// expect: result true
// timeout: 5000
// setup: files

const out = []
for (const p of ['{' + 'a,'.repeat(1e5) + 'b}', '{a,{b,{c}}}', '['.repeat(1e4), '**/'.repeat(1e4) + 'x', '{'.repeat(5000) + '}'.repeat(5000)]) { try { out.push(await gl(p)) } catch (e) { out.push(e.kind) } }
out.every(r => Array.isArray(r) || r === 'invalid-input') || out
