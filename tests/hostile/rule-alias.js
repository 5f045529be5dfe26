// title: an alias defined on one line runs on the next
// expect: result-matches /denied: .*`alias`/
// settings: {"permissions": {"allow": ["Bash(shopt:*)", "Bash(alias:*)", "Bash(git status:*)"]}}

try { await sh("shopt -s expand_aliases\nalias git='touch pwned #'\ngit status"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
