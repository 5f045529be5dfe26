// title: Bash(awk:*) does not cover an awk program with `/` right after `++` (gawk divides and runs the system() a regex reading would skip), and nothing runs
// expect: result ["denied", "denied", "not-found"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(awk:*)", "Bash(gawk:*)"]}}

await put('f.txt', 'a\n')
const r = []
for (const c of [
  `awk '{ y++ / 1; system("touch ran.txt"); z = 1 / 2 }' f.txt`,
  `gawk '{ y-- /1; system("touch ran.txt"); z = 1/2 }' f.txt`,
]) r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('ran.txt').then(() => 'exists', e => e.kind))
r
