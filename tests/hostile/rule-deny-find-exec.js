// title: find -exec rm
// expect: result-matches /denied by the rule/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("find . -name a.txt -exec rm {} +"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
