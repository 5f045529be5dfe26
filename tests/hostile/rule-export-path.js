// title: export PATH=… would make a later allowed command run another program
// expect: result-matches /denied: .*changes what later commands run/
// settings: {"permissions": {"allow": ["Bash(export:*)", "Bash(git status:*)"]}}

try { await sh("export PATH=.:$PATH && git status"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
