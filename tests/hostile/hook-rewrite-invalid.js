// title: a hook rewriting the input into an invalid one
// expect: result "invalid-input"
// setup: files
// settings: {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "cat > /dev/null; echo '{\"updatedInput\": {\"file_path\": 42, \"extra\": true}}'", "timeout": 5}]}]}}

try { await cat('a.txt') } catch (e) { e.kind }
