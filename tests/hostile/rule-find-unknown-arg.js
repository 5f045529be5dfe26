// title: a find argument known only at run time could be -exec
// expect: result-matches /denied/
// settings: {"permissions": {"allow": ["Bash(find:*)"]}}

try { await sh("x=-exec; find . -maxdepth 0 $x touch pwned ';'"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
