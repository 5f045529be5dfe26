// title: a wrapper does not hide bash -c
// expect: result-matches /denied: .*`bash -c`/
// settings: {"permissions": {"allow": ["Bash(nice:*)"]}}

try { await sh("nice -n 1 bash -c 'touch pwned'"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
