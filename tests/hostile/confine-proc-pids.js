// title: the host's processes are invisible: /proc lists only the command's own
// expect: result "private"
// tools: Bash

const r = await Bash({ command: 'ls /proc | grep -c "^[0-9]"' })
Number(r.stdout.trim()) <= 6 ? 'private' : 'host pids visible: ' + r.stdout.trim()
