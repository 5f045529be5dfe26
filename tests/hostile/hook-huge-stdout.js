// title: a PreToolUse hook printing 20 MB
// expect: result "alpha\n"
// setup: files
// settings: {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "cat > /dev/null; head -c 20000000 /dev/zero | tr '\\0' 'x'", "timeout": 10}]}]}}

await cat('a.txt')
