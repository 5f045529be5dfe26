// title: the network namespace has only loopback
// expect: result "lo"
// tools: Bash

const r = await Bash({ command: 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "' })
r.stdout.trim()
