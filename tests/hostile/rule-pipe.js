// title: a pipe runs a second command
// expect: result-matches /denied: .*`touch pwned` is not covered/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status | touch pwned"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
