// title: a PreToolUse hook answering {"decision": "block", "reason"} refuses the Write with the reason, and the file is not written
// expect: result ["denied", true, "not-found"]
// tools: Write
// settings: {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "echo '{\"decision\": \"block\", \"reason\": \"no writes today\"}'"}]}]}}

const e = await put('f.txt', 'x').catch(e => e)
;[e.kind, /no writes today/.test(e.message), await cat('f.txt').then(() => 'exists', e => e.kind)]
