// title: confined Bash cannot truncate a file outside the roots
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'truncate -s 0 {{OUTSIDE}}/canary.txt' })
r.exitCode === 0 ? 'escaped' : 'blocked'
