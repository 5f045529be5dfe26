// title: the command's own environment has none of the host's variables
// expect: result "clean"
// tools: Bash

const r = await Bash({ command: 'env' })
const leaked = /CARGO|RUST_|HOSTILE/.test(r.stdout)
leaked ? 'leaked: ' + r.stdout.slice(0, 200) : 'clean'
