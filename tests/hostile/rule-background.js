// title: & runs a second command in the background
// expect: result-matches /denied: .*background/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status & touch pwned"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
