// title: Bash(tar:*) covers listing only: extracting (both option styles), creating and --to-command need their own rules, and nothing is written
// expect: result ["denied", "denied", "denied", "denied", "f.txt", "not-found", "not-found", "not-found"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(tar:*)", "Bash(tar -cf a.tar f.txt)"]}}

await put('f.txt', 'a\n')
await put('out/keep.txt', 'k\n')
await sh('tar -cf a.tar f.txt')
const r = []
for (const c of ['tar -xf a.tar -C out', 'tar xf a.tar -C out', 'tar -cf b.tar f.txt', 'tar -tf a.tar --to-command="touch ran.txt"'])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push((await sh('tar -tf a.tar')).trim())
for (const f of ['out/f.txt', 'b.tar', 'ran.txt']) r.push(await cat(f).then(() => 'exists', e => e.kind))
r
