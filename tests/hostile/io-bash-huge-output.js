// title: a command printing 30 MB is capped
// expect: result 10485760
// tools: Bash
// timeout: 10000

(await sh('head -c 30000000 /dev/zero | tr "\\0" a')).length
