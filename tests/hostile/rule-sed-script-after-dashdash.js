// title: Bash(sed:*) checks the script after `--` and after other options too (sed -n -- 'w FILE')
// expect: result ["denied", "denied", "denied", "not-found"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(sed:*)"]}}

await put('f.txt', 'a\n')
const r = []
for (const c of ["sed -n -- 'w leak.txt' f.txt", "sed -nE 'w leak.txt' f.txt", "sed -s -u 's/a/b/w leak.txt' f.txt"])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('leak.txt').then(() => 'exists', e => e.kind))
r
