// title: printf -v evaluates an array subscript, which runs $(…)
// expect: result-matches /denied: .*printf -v/
// settings: {"permissions": {"allow": ["Bash(printf:*)"]}}

try { await sh("printf -v 'a[$(touch pwned)]' x"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
