// title: denied writes in a loop never create files
// expect: result ["denied", "denied", "path-escape"]

const out = []
for (const p of ['x.txt', 'sub/y.txt', '../outside/z.txt']) { try { await put(p, 'x'); out.push('written') } catch (e) { out.push(e.kind) } }
out
