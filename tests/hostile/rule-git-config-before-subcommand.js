// title: Bash(git log:*) does not cover git -c core.pager=CMD log (a configuration that runs a program)
// expect: result ["denied", "denied", "not-found"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(git init -q)", "Bash(git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init)", "Bash(git log:*)"]}}

await sh('git init -q')
await sh('git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init')
const r = []
for (const c of ["git -c core.pager='touch pwned' log -p", "git --config-env=core.pager=X log"])
  r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('pwned').then(() => 'exists', e => e.kind))
r
