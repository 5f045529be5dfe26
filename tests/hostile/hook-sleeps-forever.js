// title: a PreToolUse hook that sleeps forever fails closed
// expect: result "denied"
// setup: files
// settings: {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "sleep 1000", "timeout": 0.5}]}]}}

try { await cat('a.txt') } catch (e) { e.kind }
