// title: brush-parser and bash disagree on \$'…'
// expect: result-matches /denied by the rule/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("echo \\$'\\'\\'\nrm a.txt\n'"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
