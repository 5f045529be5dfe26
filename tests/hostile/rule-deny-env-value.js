// title: a program runs a command from a variable
// expect: result-matches /denied by the rule/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("GIT_PAGER='rm a.txt' git -P log"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
