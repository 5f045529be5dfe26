// title: a prefix assignment changes what an allowed command does
// expect: result-matches /denied: .*variable assignment/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("GIT_DIR=$(touch pwned) git status"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
