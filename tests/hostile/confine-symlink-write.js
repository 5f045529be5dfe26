// title: a symlink made inside the root does not carry writes outside
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'ln -s {{OUTSIDE}} l && echo pwned > l/new.txt' })
r.exitCode === 0 ? 'escaped' : 'blocked'
