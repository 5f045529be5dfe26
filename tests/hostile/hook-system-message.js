// title: a PreToolUse hook's systemMessage is shown in the output, not dropped
// expect: result "x"
// expect-stderr: /mind the quota/
// tools: Write
// settings: {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "echo '{\"systemMessage\": \"mind the quota\"}'"}]}]}}

await put('f.txt', 'x')
await cat('f.txt')
