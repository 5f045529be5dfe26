// title: /dev/shm is not a writable way out
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'p=/dev/shm/wrepl-hostile-$RANDOM; touch $p 2>/dev/null && { rm -f $p; echo escaped; }; true' })
r.stdout.includes('escaped') ? 'escaped' : 'blocked'
