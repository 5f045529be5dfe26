// title: >&file writes a file (not a descriptor duplication)
// expect: result-matches /denied: .*output redirection `>&pwned`/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status >& pwned"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
