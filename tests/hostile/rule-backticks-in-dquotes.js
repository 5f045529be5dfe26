// title: backticks inside double quotes still run
// expect: result-matches /denied: .*backticks/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status \"`touch pwned`\""); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
