// title: rm inside a subshell inside a substitution
// expect: result-matches /denied by the rule/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("echo \"$( (cd . && rm a.txt) )\""); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
