// title: a ; appends a second command
// expect: result-matches /denied: .*`touch pwned` is not covered by an allow rule.*Bash\(touch:\*\)/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status;touch pwned"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
