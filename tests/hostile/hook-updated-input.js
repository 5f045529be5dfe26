// title: a PreToolUse hook's updatedInput is what runs: the file holds the hook's content, not the script's
// expect: result "from the hook"
// tools: Write
// settings: {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\", \"updatedInput\": {\"file_path\": \"f.txt\", \"content\": \"from the hook\"}}}'"}]}]}}

await put('f.txt', 'from the script')
await cat('f.txt')
