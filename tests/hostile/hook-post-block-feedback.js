// title: a PostToolUse hook's {"decision": "block", "reason"} reaches the output as feedback after the Write ran (the file exists)
// expect: result "x"
// expect-stderr: /PostToolUse hook feedback for Write .*check the file header/
// tools: Write
// settings: {"hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "echo '{\"decision\": \"block\", \"reason\": \"check the file header\"}'"}]}]}}

await put('f.txt', 'x')
await cat('f.txt')
