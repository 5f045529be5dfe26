// title: a command printing 30 MB is capped: Bash() returns 10 MiB marked truncated, sh() refuses to pass the part off as the whole
// expect: result [10485760, true, "limit"]
// tools: Bash
// timeout: 10000

const cmd = 'head -c 30000000 /dev/zero | tr "\\0" a'
const b = await Bash({ command: cmd })
;[b.stdout.length, b.truncated, await sh(cmd).then(() => 'returned', e => e.kind)]
