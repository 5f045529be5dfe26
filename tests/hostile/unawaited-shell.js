// title: an unawaited long shell command is aborted
// expect: result "done"
// expect-stderr: /still pending/
// tools: Bash

sh('sleep 30')
'done'
