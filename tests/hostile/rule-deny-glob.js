// title: a glob in the command word expands to /bin/rm
// expect: result-matches /denied by the rule/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("/bin/r? a.txt"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
