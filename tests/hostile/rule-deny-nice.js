// title: Bash(rm:*) sees rm behind nice -n
// expect: result-matches /denied by the rule "Bash\(rm:\*\)": it matches `rm a.txt`/
// settings: {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
// setup: files

try { await sh("nice -n 5 rm a.txt"); 'ran' } catch (e) { `${e.kind}: ${e.message}` }
