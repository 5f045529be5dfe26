// title: Bash(git show:*) does not cover --textconv or --show-signature (they run programs)
// expect: result ["denied", "denied", "denied"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(git init -q)", "Bash(git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init)", "Bash(git show:*)"]}}

await sh('git init -q')
await sh('git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init')
const r = []
for (const o of ['--textconv', '--show-signature', '-o leak.txt']) r.push(await sh('git show ' + o).then(() => 'ran', e => e.kind))
r
