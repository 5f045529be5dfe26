// title: a # comment holding a quote hides a second line from Bash(git status:*)
// expect: result-matches /denied: .*a comment `#` cannot match an allow rule/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status # it's fine\ntouch pwned"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
