// title: Bash(sort:*) does not cover an abbreviated --output (GNU sort accepts --out=FILE, --outp FILE)
// expect: result ["denied", "denied", "denied", "not-found"]
// settings: {"permissions": {"allow": ["Bash(sort:*)"]}}

const r = []
for (const c of ['sort --out=leak.txt', 'sort --outp leak.txt', 'sort --temporary-directory=. -S 1'])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('leak.txt').then(() => 'exists', e => e.kind))
r
