// title: moving a protected file's directory aside does not expose the file to the next command
// expect: result "pinned"
// tools: Bash
// setup: protected-state

const a = await Bash({ command: 'mv state st2 2>/dev/null; rm -rf state 2>/dev/null; mv cache c2 2>/dev/null; ls -d st2 c2 2>/dev/null; true' })
const b = await Bash({ command: 'cat st2/sessions.sqlite3 c2/cache.key state/sessions.sqlite3 cache/cache.key 2>/dev/null | grep -c PROTECTED-STATE; true' })
a.stdout.trim() === '' && b.stdout.trim() === '0' ? 'pinned' : 'exposed: ' + a.stdout + '|' + b.stdout
