// title: eval's string is parsed
// expect: result-matches /denied by the rule.*it matches `rm a.txt`/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("eval \"r\"\"m a.txt\""); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
