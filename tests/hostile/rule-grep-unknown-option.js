// title: Bash(grep:*) holds grep to its known read-only options: an unknown one fails closed, the known ones run
// expect: result ["denied", "denied", "2:needle"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(grep:*)"]}}

await put('f.txt', 'x\nneedle\n')
const r = []
for (const c of ['grep --frobnicate needle f.txt', 'grep --exclude-from="$(touch ran.txt)" needle f.txt'])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push((await sh('grep -n needle f.txt')).trim())
r
