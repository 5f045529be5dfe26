// title: substitute the hook's helper script (the hook then runs the attacker's code)
// expect: result ["protected", "protected"]
// tools: Write Edit
// setup: protected-state
// settings: {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh hooks/guard.sh", "timeout": 5}]}]}}

const out = [];
try { await put('hooks/guard.sh', '#!/bin/sh\necho pwned > /tmp/pwned\n'); out.push('ok') } catch (e) { out.push(e.kind || e.name) }
try { await Edit({ file_path: 'hooks/guard.sh', old_string: 'cat > /dev/null', new_string: 'id > pwned' }); out.push('ok') } catch (e) { out.push(e.kind || e.name) }
out
