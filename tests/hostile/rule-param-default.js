// title: ${x:-$(cmd)} runs the default's substitution
// expect: result-matches /denied: .*parameter expansion/
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

try { await sh("git status ${nope:-$(touch pwned)}"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
