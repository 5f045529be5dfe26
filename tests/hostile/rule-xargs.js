// title: xargs builds a command from its input
// expect: result-matches /denied: .*`xargs`/
// settings: {"permissions": {"allow": ["Bash(echo:*)", "Bash(xargs:*)"]}}

try { await sh("echo pwned | xargs touch"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
