// title: output redirection writes a file under an allow rule for a read-only command
// expect: result-matches /denied: .*output redirection `>pwned`/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status > pwned"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
