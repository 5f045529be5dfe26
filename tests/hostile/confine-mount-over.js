// title: a mount over the outside dir is refused, even in a new mount namespace
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'unshare -m sh -c "mount -t tmpfs t {{OUTSIDE}} && echo pwned > {{OUTSIDE}}/new.txt" 2>/dev/null || mount -t tmpfs t {{OUTSIDE}}' })
r.exitCode === 0 ? 'escaped' : 'blocked'
