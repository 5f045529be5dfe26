// title: a PreToolUse hook's permissionDecision ask, with nobody to ask, refuses the Write and no file is written
// expect: result ["denied", "not-found"]
// tools: Write
// settings: {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"ask\"}}'"}]}]}}

const e = await put('f.txt', 'x').catch(e => e)
;[e.kind, await cat('f.txt').then(() => 'exists', e => e.kind)]
