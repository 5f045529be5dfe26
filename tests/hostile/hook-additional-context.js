// title: a hook's additionalContext (PreToolUse and PostToolUse) reaches the output the model reads instead of being dropped
// expect: result "x"
// expect-stderr: /PreToolUse hook context for Write .*prefer small files[\s\S]*PostToolUse hook context for Write .*ran the linter/
// tools: Write
// settings: {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"additionalContext\": \"prefer small files\"}}'"}]}], "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"additionalContext\": \"ran the linter\"}}'"}]}]}}

await put('f.txt', 'x')
await cat('f.txt')
