// title: Bash(awk:*) does not cover awk programs that run commands or write files (system, print >, print |, getline, -f), and the file is not written
// expect: result ["denied", "denied", "denied", "denied", "denied", "denied", "a", "not-found", "not-found"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(awk:*)"]}}

await put('f.txt', 'a b\n')
await put('prog.awk', 'BEGIN { system("touch ran.txt") }\n')
const r = []
for (const c of [
  `awk 'BEGIN { system("touch ran.txt") }'`,
  `awk '{ print > "out.txt" }' f.txt`,
  `awk '{ print | "sh" }' f.txt`,
  `awk 'BEGIN { while (("touch ran.txt" | getline l) > 0) print l }'`,
  'awk -f prog.awk',
  `awk '@load "filefuncs"; BEGIN { print 1 }'`,
]) r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push((await sh(`awk '{ print $1 }' f.txt`)).trim())
for (const f of ['ran.txt', 'out.txt']) r.push(await cat(f).then(() => 'exists', e => e.kind))
r
