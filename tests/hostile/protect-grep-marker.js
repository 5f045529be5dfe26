// title: Grep for a string only wrepl's state contains, every way (no path, ".", globs, -i, multiline, a symlinked dir)
// expect: result ["notes.txt"]
// setup: protected-state
// settings: {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh hooks/guard.sh", "timeout": 5}]}]}}

const names = new Set();
for (const o of [{}, { path: '.' }, { glob: '*' }, { glob: '**/*' }, { glob: '**/*.{sqlite3,json,sh,key,cwasm,png}' },
                 { path: 'st' }, { '-i': true }, { multiline: true }, { glob: '.*' }, { type: 'json' }]) {
  for (const f of await rgf('PROTECTED-STATE', o)) names.add(f.split('/').pop());
}
[...names].sort()
