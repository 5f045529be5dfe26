// title: process substitution runs a command
// expect: result-matches /denied: .*process substitution/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status <(touch pwned)"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
