// title: a hard link to the outside canary cannot be made in the root
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'ln {{OUTSIDE}}/canary.txt hl && echo pwned >> hl' })
r.exitCode === 0 ? 'escaped' : 'blocked'
