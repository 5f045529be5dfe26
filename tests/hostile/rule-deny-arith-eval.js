// title: arithmetic evaluates a variable holding a[$(…)]
// expect: result-matches /denied by the rule.*arithmetic/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("x='a[$(rm a.txt)]'; echo $((x))"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
