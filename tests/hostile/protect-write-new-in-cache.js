// title: plant a new artifact (and a subdirectory) inside the compile cache
// expect: result ["protected", "protected"]
// tools: Write
// setup: protected-state

const out = [];
for (const p of ['cache/guest-0.1.0-deadbeefdeadbeef.cwasm', 'cache/sub/dir/x.cwasm']) {
  try { await put(p, 'WREPLCW1 forged'); out.push('ok') } catch (e) { out.push(e.kind || e.name) }
}
out
