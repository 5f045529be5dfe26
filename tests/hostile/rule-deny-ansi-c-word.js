// title: $'rm' is a command word known only when it runs
// expect: result-matches /denied by the rule.*only known when it runs/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("$'rm' a.txt"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
