// title: xargs runs rm with its input
// expect: result-matches /denied by the rule/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("echo a.txt | xargs rm"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
