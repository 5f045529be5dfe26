// title: Bash(rm:*) sees rm behind timeout with options
// expect: result-matches /denied by the rule/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("timeout -s KILL 5 rm a.txt"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
