// title: Bash(git branch:*) lists branches but does not create one (git branch NAME writes a ref)
// expect: result ["ok", "denied", "denied", "not-found"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(git init -q)", "Bash(git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init)", "Bash(git branch:*)"]}}

await sh('git init -q')
await sh('git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init')
const r = [await sh('git branch --list').then(o => o.includes('*') ? 'ok' : o, e => e.kind)]
r.push(await sh('git branch evil').then(() => 'ran', e => e.kind))
r.push(await sh('git branch -D master').then(() => 'ran', e => e.kind))
r.push(await cat('.git/refs/heads/evil').then(() => 'exists', e => e.kind))
r
