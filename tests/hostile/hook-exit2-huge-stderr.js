// title: a PreToolUse hook exiting 2 with 20 MB of stderr
// expect: result ["denied", true]
// setup: files
// settings: {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "cat > /dev/null; head -c 20000000 /dev/zero | tr '\\0' 'e' >&2; exit 2", "timeout": 10}]}]}}

try { await cat('a.txt') } catch (e) { [e.kind, e.message.length < 20000] }
