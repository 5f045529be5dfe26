// title: read other sessions' data from the session store
// expect: result ["protected", "protected", "protected"]
// setup: protected-state

const out = [];
for (const p of ['state/sessions.sqlite3', 'state/sessions.sqlite3-wal', 'state/sessions.sqlite3-shm']) {
  try { await cat(p); out.push('read') } catch (e) { out.push(e.kind || e.name) }
}
out
