// title: /proc/self/root does not bypass the write rules
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'echo pwned > /proc/self/root{{OUTSIDE}}/new.txt' })
r.exitCode === 0 ? 'escaped' : 'blocked'
