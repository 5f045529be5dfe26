// title: a newline appends a second command
// expect: result-matches /denied: .*`touch pwned` is not covered/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status\ntouch pwned"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
