// title: Bash(sed:*) checks every script, in -e, -eSCRIPT, --expression=SCRIPT and --expression SCRIPT
// expect: result ["denied", "denied", "denied", "denied", "not-found", "a\na\n"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(sed:*)"]}}

await put('f.txt', 'a\n')
const r = []
for (const c of ["sed -e p -e 'w leak.txt' f.txt", "sed '-ew leak.txt' f.txt", "sed --expression='w leak.txt' f.txt",
  "sed --expression 'w leak.txt' f.txt"])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('leak.txt').then(() => 'exists', e => e.kind))
// Printing scripts in the same forms still run.
r.push(await sh("sed -e p f.txt"))
r
