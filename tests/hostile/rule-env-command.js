// title: env runs a command under Bash(env:*)
// expect: result-matches /denied: .*`env` running a command/
// settings: {"permissions": {"allow": ["Bash(env:*)"]}}

try { await sh("env touch pwned"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
