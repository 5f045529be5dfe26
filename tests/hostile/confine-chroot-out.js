// title: chroot does not lift the write rules
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'chroot / sh -c "echo pwned > {{OUTSIDE}}/new.txt"' })
r.exitCode === 0 ? 'escaped' : 'blocked'
