// title: a TCP connect to an outside address fails without allowNet
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'timeout 5 bash -c "exec 3<>/dev/tcp/10.255.255.1/80" 2>/dev/null' })
r.exitCode === 0 ? 'escaped' : 'blocked'
