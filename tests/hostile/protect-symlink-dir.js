// title: write into the compile cache through a symlinked directory inside the root
// expect: result ["protected", "protected"]
// tools: Write
// setup: protected-state

const out = [];
for (const p of ['innocent/guest.cwasm', 'innocent/new.cwasm']) {
  try { await put(p, 'WREPLCW1 forged'); out.push('ok') } catch (e) { out.push(e.kind || e.name) }
}
out
