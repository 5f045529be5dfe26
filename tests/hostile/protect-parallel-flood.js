// title: a flood of parallel writes and reads at every protected path, hoping one slips through
// expect: result ["protected"]
// tools: Write Edit
// setup: protected-state
// settings: {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh hooks/guard.sh", "timeout": 5}]}]}}

const targets = ['cache/guest.cwasm', 'cache/cache.key', 'state/sessions.sqlite3', 'state/sessions.sqlite3-wal',
                 'settings.json', 'mcp.json', 'innocent/guest.cwasm', 'readme.md', 'db', 'st/sessions.sqlite3-shm'];
const calls = [];
for (let i = 0; i < 5; i++) {
  for (const t of targets) {
    calls.push(put(t, 'pwned ' + i));
    calls.push(cat(t));
    calls.push(Edit({ file_path: t, old_string: 'PROTECTED-STATE', new_string: 'pwned' }));
  }
}
const kinds = (await Promise.allSettled(calls)).map(r => r.status === 'rejected' ? (r.reason.kind || r.reason.name) : 'ok');
[...new Set(kinds)]
