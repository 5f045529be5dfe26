// title: chdir next to the store, then write its WAL by a bare relative name
// expect: result ["ok", "protected", "protected"]
// tools: Write
// setup: protected-state

const out = [];
try { await chdir('st'); out.push('ok') } catch (e) { out.push(e.kind || e.name) }
try { await put('sessions.sqlite3-wal', 'forged frames'); out.push('ok') } catch (e) { out.push(e.kind || e.name) }
try { await put('../settings.json', '{}'); out.push('ok') } catch (e) { out.push(e.kind || e.name) }
out
