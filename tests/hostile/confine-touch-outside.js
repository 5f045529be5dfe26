// title: confined Bash cannot create a file outside the roots
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'touch {{OUTSIDE}}/made 2>/dev/null; echo $?' })
r.stdout.trim() === '0' ? 'escaped' : 'blocked'
