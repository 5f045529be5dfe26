// title: Bash(git diff:*) does not cover git diff --output=FILE, nor --ext-diff (runs a configured program)
// expect: result ["denied", "denied", "not-found"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(git init -q)", "Bash(git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init)", "Bash(git diff:*)"]}}

await sh('git init -q')
await sh('git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init')
const r = [await sh('git diff --output=leak.txt HEAD').then(() => 'ran', e => e.kind)]
r.push(await sh('git diff --ext-diff HEAD').then(() => 'ran', e => e.kind))
r.push(await cat('leak.txt').then(() => 'exists', e => e.kind))
r
