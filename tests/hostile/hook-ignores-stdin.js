// title: a hook that never reads a 4 MB input and sleeps
// expect: result "denied"
// timeout: 10000
// settings: {"hooks": {"PreToolUse": [{"matcher": "Grep", "hooks": [{"type": "command", "command": "sleep 1000", "timeout": 0.5}]}]}}

try { await rg('z'.repeat(4 << 20)) } catch (e) { e.kind }
