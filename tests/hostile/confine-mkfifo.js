// title: no fifo, directory or device node outside the roots
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'mkfifo {{OUTSIDE}}/f || mkdir {{OUTSIDE}}/d || mknod {{OUTSIDE}}/n c 1 3; test -e {{OUTSIDE}}/f -o -e {{OUTSIDE}}/d -o -e {{OUTSIDE}}/n && echo made' })
r.stdout.includes('made') ? 'escaped' : 'blocked'
