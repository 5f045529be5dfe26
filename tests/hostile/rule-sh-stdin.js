// title: a shell reading commands from a pipe
// expect: result-matches /denied: .*`sh` reading commands/
// settings: {"permissions": {"allow": ["Bash(echo:*)", "Bash(sh:*)"]}}

try { await sh("echo touch pwned | sh"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
