// title: Bash(awk:*) does not cover an awk program known only when the command runs (a variable, a substitution)
// expect: result ["denied", "denied", "not-found"]
// settings: {"permissions": {"allow": ["Bash(awk:*)"]}}

const r = []
for (const c of ['p=\'BEGIN{system("touch ran.txt")}\'; awk "$p"', 'awk "$(printf \'BEGIN{system(\\"touch ran.txt\\")}\')"'])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('ran.txt').then(() => 'exists', e => e.kind))
r
