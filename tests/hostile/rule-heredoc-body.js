// title: a here-document body runs $(…) under Bash(git status:*)
// expect: result-matches /denied: .*here-document/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status <<EOF\n$(touch pwned)\nEOF"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
