// title: confined Bash cannot delete the outside canary
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'rm -f {{OUTSIDE}}/canary.txt 2>/dev/null; test -e {{OUTSIDE}}/canary.txt && echo still' })
r.stdout.trim() === 'still' ? 'blocked' : 'escaped'
