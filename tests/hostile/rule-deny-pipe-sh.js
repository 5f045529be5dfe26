// title: a shell reading a pipe runs what cannot be known
// expect: result-matches /denied by the rule.*reading commands from its input/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("echo rm a.txt | sh"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
