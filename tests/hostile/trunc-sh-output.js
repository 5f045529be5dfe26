// title: sh() whose output passes the 10 MiB stream bound fails with a limit error saying the command ran, instead of returning the cut part as the whole; Bash() returns it marked
// expect: result ["limit", true, true, 10485760]
// tools: Bash

const r = []
const cmd = 'head -c 11000000 /dev/zero | tr "\\0" x'
r.push(await sh(cmd).then(() => 'returned', e => e.kind))
const e = await sh(cmd).catch(e => e)
r.push(/the command ran \(exit code 0\)/.test(e.message))
const b = await Bash({ command: cmd })
r.push(b.truncated)
r.push(b.stdout.length)
r
