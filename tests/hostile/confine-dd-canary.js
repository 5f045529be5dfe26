// title: dd of= a file outside the roots
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'echo pwned | dd of={{OUTSIDE}}/canary.txt conv=notrunc' })
r.exitCode === 0 ? 'escaped' : 'blocked'
