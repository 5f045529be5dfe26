// title: Bash(sed:*) does not cover an abbreviated --in-place (GNU sed accepts --in-pl) nor --follow-symlinks
// expect: result ["denied", "denied", "a\n"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(sed:*)"]}}

await put('f.txt', 'a\n')
const r = []
for (const c of ['sed --in-pl s/a/X/ f.txt', 'sed --follow-symlinks -i s/a/X/ f.txt'])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('f.txt'))
r
