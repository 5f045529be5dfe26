// title: Bash(rg:*) does not cover ripgrep's options that run programs (--pre, --pre-glob with --pre, -z/--search-zip, --hostname-bin), and the program never runs
// expect: result ["denied", "denied", "denied", "denied", "denied", "not-found"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(rg:*)"]}}

await put('pre.sh', '#!/bin/sh\ntouch ran.txt\ncat "$1"\n')
await put('f.txt', 'needle\n')
const r = []
for (const c of ['rg --pre ./pre.sh needle', 'rg --pre=./pre.sh needle', 'rg --pre-glob "*.txt" --pre ./pre.sh needle', 'rg -z needle', 'rg --hostname-bin ./pre.sh needle'])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('ran.txt').then(() => 'exists', e => e.kind))
r
