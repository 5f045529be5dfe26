// title: declare evaluates an array subscript in a quoted argument
// expect: result-matches /denied: .*subscript/
// settings: {"permissions": {"allow": ["Bash(declare:*)"]}}

try { await sh("declare 'a[$(touch pwned)]=1'"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
