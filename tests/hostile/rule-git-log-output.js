// title: Bash(git log:*) does not cover git log --output=FILE (it writes a file)
// expect: result ["denied", "not-found", "ok"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(git init -q)", "Bash(git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init)", "Bash(git log:*)"]}}

await sh('git init -q')
await sh('git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init')
const r = [await sh('git log --output=leak.txt').then(() => 'ran', e => e.kind)]
r.push(await cat('leak.txt').then(() => 'exists', e => e.kind))
// The read-only use still runs.
r.push(await sh('git log --oneline -1 --format=%s').then(o => o.trim() === 'init' ? 'ok' : o, e => e.kind))
r
