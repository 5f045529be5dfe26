// title: chdir into the compile cache (directly and through a symlink) to work from inside
// expect: result ["protected", "protected"]
// setup: protected-state

const out = [];
for (const d of ['cache', 'innocent']) {
  try { await chdir(d); out.push('ok') } catch (e) { out.push(e.kind || e.name) }
}
out
