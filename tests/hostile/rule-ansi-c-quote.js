// title: ANSI-C quoting $'\'' ends a quote the old splitter thought was open
// expect: result-matches /denied: .*ANSI-C quoting/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status $'\\'' ; touch pwned"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
