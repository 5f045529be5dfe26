// title: a read-only table also judges the command behind a wrapper (Bash(nice sort:*) does not cover nice sort -o FILE)
// expect: result ["denied", "denied", "denied", "not-found", "a\n", "a\n"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(nice sort:*)", "Bash(timeout 5 sed:*)", "Bash(stdbuf -oL sort:*)"]}}

await put('f.txt', 'a\n')
const r = []
for (const c of ['nice sort -o leak.txt f.txt', 'timeout 5 sed -i s/a/X/ f.txt', 'stdbuf -oL sort --output=leak.txt f.txt'])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('leak.txt').then(() => 'exists', e => e.kind))
r.push(await cat('f.txt'))
// The read-only use behind the wrapper still runs.
r.push(await sh('nice sort f.txt'))
r
