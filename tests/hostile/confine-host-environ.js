// title: /proc/$PPID/environ and /proc/1/environ show none of the host's variables
// expect: result "clean"
// tools: Bash

const r = await Bash({ command: 'cat /proc/$PPID/environ /proc/1/environ 2>/dev/null | tr "\\0" "\\n"' })
const leaked = /CARGO|RUST|HOSTILE/.test(r.stdout)
leaked ? 'leaked: ' + r.stdout.slice(0, 200) : 'clean'
