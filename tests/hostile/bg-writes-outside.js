// title: a background command is confined like any other: writing outside the roots fails, and what it printed says so
// expect: result "blocked"
// tools: Bash

const s = await Bash({ command: 'sleep 0.2; echo escaped > {{OUTSIDE}}/bg.txt && echo wrote; cat {{OUTSIDE}}/bg.txt', run_in_background: true })
const o = await TaskOutput({ task_id: s.backgroundTaskId, timeout: 20000 })
o.status === 'completed' && !o.stdout.includes('wrote') ? 'blocked' : 'escaped: ' + JSON.stringify(o)
