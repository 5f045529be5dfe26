// title: a function definition shadows an allowed command
// expect: result-matches /denied: .*function definition/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git() { touch pwned; }; git status"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
