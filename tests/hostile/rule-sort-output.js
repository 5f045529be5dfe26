// title: Bash(sort:*) does not cover sort -o FILE, --output or --compress-program (write a file, run a program)
// expect: result ["denied", "denied", "denied", "denied", "not-found"]
// settings: {"permissions": {"allow": ["Bash(sort:*)"]}}

const r = []
for (const c of ['sort -o leak.txt', 'sort --output=leak.txt', 'sort -ro leak.txt', 'sort --compress-program=sh -S 1'])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('leak.txt').then(() => 'exists', e => e.kind))
r
