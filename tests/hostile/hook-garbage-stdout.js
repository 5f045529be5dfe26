// title: a PreToolUse hook printing non-JSON
// expect: result "alpha\n"
// setup: files
// settings: {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "cat > /dev/null; echo 'this is {not json'; printf '\\001\\002\\377'", "timeout": 5}]}]}}

await cat('a.txt')
