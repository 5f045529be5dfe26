// title: /bin/rm is rm
// expect: result-matches /denied by the rule/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("/bin/rm a.txt"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
