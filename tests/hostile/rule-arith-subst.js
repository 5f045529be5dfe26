// title: $((…$(cmd)…)) runs the substitution inside arithmetic
// expect: result-matches /denied: .*arithmetic/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status $((1+$(touch pwned)))"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
