// title: find -exec runs a command under Bash(find:*)
// expect: result-matches /denied: .*find -exec/
// settings: {"permissions": {"allow": ["Bash(find:*)"]}}

try { await sh("find . -maxdepth 0 -exec touch pwned ;"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
