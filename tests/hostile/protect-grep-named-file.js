// title: Grep the store and the cache key named as the file to search
// expect: result ["protected", "protected", "protected"]
// setup: protected-state

const out = [];
for (const p of ['state/sessions.sqlite3', 'db', 'cache/cache.key']) {
  try { await rg('.', { path: p }); out.push('searched') } catch (e) { out.push(e.kind || e.name) }
}
out
