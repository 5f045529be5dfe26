// title: \$'…' is ANSI-C quoting to brush-parser but not to bash, which runs the next line
// expect: result-matches /denied: .*could not be verified/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status \\$'\\'\\'\ntouch pwned\n'"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
