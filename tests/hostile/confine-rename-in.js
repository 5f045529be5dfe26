// title: moving the outside canary into the root is refused
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'mv {{OUTSIDE}}/canary.txt ./stolen.txt' })
r.exitCode === 0 ? 'escaped' : 'blocked'
