// title: edit the settings file and read the store through innocent-looking symlinks
// expect: result ["protected", "protected", "protected", "protected"]
// tools: Write Edit
// setup: protected-state

const out = [];
try { await Edit({ file_path: 'readme.md', old_string: 'Bash', new_string: 'Nope' }); out.push('ok') } catch (e) { out.push(e.kind || e.name) }
try { await cat('db'); out.push('read') } catch (e) { out.push(e.kind || e.name) }
try { await cat('st/sessions.sqlite3-wal'); out.push('read') } catch (e) { out.push(e.kind || e.name) }
try { await put('st/sessions.sqlite3-journal', 'x'); out.push('ok') } catch (e) { out.push(e.kind || e.name) }
out
