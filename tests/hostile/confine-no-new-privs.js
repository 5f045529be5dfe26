// title: no_new_privs is set for the command
// expect: result "1"
// tools: Bash

(await Bash({ command: 'grep NoNewPrivs /proc/self/status | cut -f2' })).stdout.trim()
