// title: a quoted space makes one word, not the allowed command
// expect: result-matches /denied: .*not covered/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("'git status'"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
