// title: Bash(rm:*) sees rm behind env with assignments
// expect: result-matches /denied by the rule/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("env -i PATH=/bin:/usr/bin rm a.txt"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
