// title: a newline followed by a command
// expect: result "same"
// tools: Bash

const x = 'a\nrm -f ../outside/canary.txt\n'
const out = await sh('printf %s ' + shQuote(x))
out === x ? 'same' : JSON.stringify(out)
