// title: no descriptor of the host (store, cache, sockets) leaks into the command
// expect: result "none"
// tools: Bash

const r = await Bash({ command: 'for f in /proc/self/fd/*; do n=${f##*/}; [ $n -gt 2 ] && readlink $f; done; true' })
const extra = r.stdout.split('\n').filter(l => l && !l.startsWith('/proc/'))
extra.length === 0 ? 'none' : extra.join(',')
