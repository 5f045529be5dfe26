// title: Bash(sed:*) does not cover a sed script known only when it runs, nor one read from a file (-f)
// expect: result ["denied", "denied"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(sed:*)"]}}

await put('f.txt', 'a\n')
await put('s.sed', 'w leak.txt\n')
const r = []
for (const c of ['sed -n "$(cat s.sed)" f.txt', 'sed -f s.sed f.txt']) r.push(await sh(c).then(() => 'ran', e => e.kind))
r
