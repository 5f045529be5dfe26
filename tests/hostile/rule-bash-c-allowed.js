// title: bash -c never matches an allow rule, even Bash(bash:*)
// expect: result-matches /denied: .*`bash -c`/
// settings: {"permissions": {"allow": ["Bash(bash:*)"]}}

try { await sh("bash -c 'touch pwned'"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
