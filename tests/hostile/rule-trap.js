// title: trap runs its string when the shell exits
// expect: result-matches /denied: .*`trap`/
// settings: {"permissions": {"allow": ["Bash(trap:*)", "Bash(true)"]}}

try { await sh("trap 'touch pwned' EXIT; true"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
