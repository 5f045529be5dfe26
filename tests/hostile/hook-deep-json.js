// title: a PreToolUse hook printing JSON nested 100k deep
// expect: result "alpha\n"
// setup: files
// settings: {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "cat > /dev/null; head -c 100000 /dev/zero | tr '\\0' '['", "timeout": 5}]}]}}

await cat('a.txt')
