// title: list wrepl's state with Glob (any depth, through a symlinked dir, by extension, hidden names)
// expect: result ["notes.txt"]
// setup: protected-state
// settings: {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh hooks/guard.sh", "timeout": 5}]}]}}

const names = new Set();
for (const [p, o] of [['**/*', {}], ['**/*', { path: '.' }], ['**/*', { path: 'st' }], ['**/.*', {}],
                      ['**/*.{cwasm,key,png,json,sh,sqlite3,sqlite3-wal,sqlite3-shm}', {}], ['*/*', {}]]) {
  for (const f of await gl(p, o)) names.add(f.split('/').pop());
}
[...names].sort()
