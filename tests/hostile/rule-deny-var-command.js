// title: a variable as the command word
// expect: result-matches /denied by the rule.*`\$x` is only known/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("x=rm; $x a.txt"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
