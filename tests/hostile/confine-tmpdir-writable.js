// title: the per-call TMPDIR is writable and private
// expect: result "hi"
// tools: Bash

(await Bash({ command: 'echo hi > "$TMPDIR/x" && cat "$TMPDIR/x"' })).stdout.trim()
