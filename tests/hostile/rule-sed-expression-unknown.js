// title: Bash(sed:*) does not cover a script passed to -e or --expression as a word known only when it runs
// expect: result ["denied", "denied", "not-found"]
// tools: Write
// settings: {"env": {"S": "w leak.txt"}, "permissions": {"allow": ["Bash(sed:*)"]}}

await put('f.txt', 'a\n')
const r = []
for (const c of ['sed -n -e "$S" f.txt', 'sed --expression "$S" f.txt'])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('leak.txt').then(() => 'exists', e => e.kind))
r
