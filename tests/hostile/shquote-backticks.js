// title: backticks
// expect: result "same"
// tools: Bash

const x = '`touch ../outside/pwned`'
const out = await sh('printf %s ' + shQuote(x))
out === x ? 'same' : JSON.stringify(out)
