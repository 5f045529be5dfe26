// title: "r""m" is rm after quote removal
// expect: result-matches /denied by the rule/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("\"r\"\"m\" a.txt"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
