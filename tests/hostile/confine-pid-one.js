// title: the command's shell is pid 1 of its own pid namespace
// expect: result "1"
// tools: Bash

(await Bash({ command: 'echo $$' })).stdout.trim()
