// title: a failed sh() whose output is longer than its message keeps says so in the message, and e.stderr holds all of it
// expect: result [true, 5000]
// tools: Bash

const e = await sh('head -c 5000 /dev/zero | tr "\\0" y >&2; exit 3').catch(e => e)
;[/\[the last 2000 of 5000 characters; e\.stderr and e\.stdout hold all\]/.test(e.message), e.stderr.length]
