// title: a PreToolUse hook printing {"continue": false, "stopReason"} stops the Write before it runs and the evaluation with it; the reason is reported and no file is written
// expect: error /AbortError: the evaluation was cancelled/
// expect-stderr: /a PreToolUse hook stopped the evaluation at Write .*frozen by policy/
// tools: Write
// settings: {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "echo '{\"continue\": false, \"stopReason\": \"frozen by policy\"}'"}]}]}}
// then: await cat('f.txt').then(() => 'exists', e => e.kind)
// then-expect: result "not-found"

await put('f.txt', 'x')
'after'
