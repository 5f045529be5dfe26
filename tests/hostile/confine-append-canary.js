// title: confined Bash cannot append to a file outside the roots
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'echo pwned >> {{OUTSIDE}}/canary.txt' })
r.exitCode === 0 ? 'escaped' : 'blocked'
