// title: bash -c's string is parsed
// expect: result-matches /denied by the rule/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("bash -c 'ls; rm a.txt'"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
