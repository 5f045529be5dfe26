// title: the host's pid is out of reach: the shell's parent is outside its pid namespace
// expect: result "0 unseen"
// tools: Bash

const r = await Bash({ command: 'echo -n "$PPID "; ls /proc/$PPID/cmdline >/dev/null 2>&1 && echo seen || echo unseen' })
r.stdout.trim()
