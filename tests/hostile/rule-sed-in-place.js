// title: Bash(sed:*) does not cover sed -i / --in-place (it edits the file)
// expect: result ["denied", "denied", "denied", "a\n"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(sed:*)"]}}

await put('f.txt', 'a\n')
const r = []
for (const c of ['sed -i s/a/X/ f.txt', 'sed --in-place=.bak s/a/X/ f.txt', 'sed -ni s/a/X/p f.txt'])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('f.txt'))
r
