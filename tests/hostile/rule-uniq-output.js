// title: Bash(uniq:*) does not cover uniq IN OUT (it writes OUT); uniq IN still runs
// expect: result ["denied", "not-found", "a"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(uniq:*)"]}}

await put('f.txt', 'a\na\n')
const r = []
r.push(await sh('uniq f.txt out.txt').then(() => 'ran', e => e.kind))
r.push(await cat('out.txt').then(() => 'exists', e => e.kind))
r.push((await sh('uniq f.txt')).trim())
r
