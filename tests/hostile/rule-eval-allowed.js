// title: eval never matches an allow rule, even Bash(eval:*)
// expect: result-matches /denied: .*`eval` \(it runs its arguments/
// settings: {"permissions": {"allow": ["Bash(eval:*)"]}}

try { await sh("eval touch pwned"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
