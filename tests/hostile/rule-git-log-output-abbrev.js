// title: Bash(git log:*) does not cover an abbreviated --output (git accepts --out=FILE) nor --output FILE as two words
// expect: result ["denied", "denied", "denied", "not-found"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(git init -q)", "Bash(git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init)", "Bash(git log:*)"]}}

await sh('git init -q')
await sh('git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init')
const r = []
for (const c of ['git log --out=leak.txt', 'git log --outp leak.txt', 'git log --output leak.txt'])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('leak.txt').then(() => 'exists', e => e.kind))
r
