// title: Bash(echo *) does not cover a substitution in its wildcard
// expect: result-matches /denied: .*command substitution/
// settings: {"permissions": {"allow": ["Bash(echo *)"]}}

try { await sh("echo $(touch pwned)"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
