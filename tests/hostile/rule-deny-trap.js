// title: trap's string runs at exit
// expect: result-matches /denied by the rule/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("trap 'rm a.txt' EXIT"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
