// title: a PreToolUse hook's permissionDecision deny refuses an allowed Write with its reason, and the file is not written
// expect: result ["denied", true, "not-found"]
// tools: Write
// settings: {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"deny\", \"permissionDecisionReason\": \"writes need review\"}}'"}]}]}}

const e = await put('f.txt', 'x').catch(e => e)
;[e.kind, /writes need review/.test(e.message), await cat('f.txt').then(() => 'exists', e => e.kind)]
