// title: writing inside the root still works when confined
// expect: result "hi"
// tools: Bash

(await Bash({ command: 'echo hi > made.txt && cat made.txt' })).stdout.trim()
