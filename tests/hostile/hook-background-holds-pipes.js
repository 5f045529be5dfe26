// title: a hook whose background child keeps the pipes open
// expect: result "denied"
// setup: files
// settings: {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "sleep 1000 & echo '{}'", "timeout": 0.5}]}]}}

try { await cat('a.txt') } catch (e) { e.kind }
