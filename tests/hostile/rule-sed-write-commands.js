// title: Bash(sed:*) does not cover sed scripts that write files or run commands (w, W, e, s///w, s///e, r)
// expect: result ["denied", "denied", "denied", "denied", "denied", "denied", "denied", "not-found", "not-found", "X\n"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(sed:*)"]}}

await put('f.txt', 'a\n')
const scripts = ["'s/a/X/w leak.txt'", "'w leak.txt'", "'1W leak.txt'", "'1e touch pwned'", "'s/a/touch pwned/e'",
  "-e 'p' -e 'w leak.txt'", "'r /etc/passwd'"]
const r = []
for (const s of scripts) r.push(await sh('sed -n ' + s + ' f.txt').then(() => 'ran', e => e.kind))
for (const f of ['leak.txt', 'pwned']) r.push(await cat(f).then(() => 'exists', e => e.kind))
// A script that only substitutes and prints still runs.
r.push(await sh("sed 's/a/X/' f.txt"))
r
