// title: a PostToolUse hook that hangs
// expect: result "alpha\n"
// expect-stderr: /PostToolUse hook .*timed out/
// setup: files
// settings: {"hooks": {"PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "sleep 1000", "timeout": 0.5}]}]}}

try { await cat('a.txt') } catch (e) { e.kind }
