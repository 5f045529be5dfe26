// title: a carriage return before the newline
// expect: result-matches /denied: .*control character/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status\r\ntouch pwned"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
