// title: create a hot rollback journal next to the store so SQLite "recovers" attacker pages
// expect: result "protected"
// tools: Write
// setup: protected-state

try { await put('state/sessions.sqlite3-journal', '\u00d9\u00d5\u0005\u00f9\u0020\u00a1\u0063\u00d7 forged pages') } catch (e) { e.kind || e.name }
