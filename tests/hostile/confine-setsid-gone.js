// title: a setsid child does not survive the call (the next call cannot see it)
// expect: result "gone"
// tools: Bash

await Bash({ command: 'setsid sleep 1000 > /dev/null 2>&1 < /dev/null & echo started' })
const r = await Bash({ command: 'pgrep -x sleep || true' })
r.stdout.trim() === '' ? 'gone' : 'visible: ' + r.stdout.trim()
