// title: a 30 KB payload
// expect: result "same"
// tools: Bash

const x = "'; touch ../outside/p; '".repeat(1000)
const out = await sh('printf %s ' + shQuote(x))
out === x ? 'same' : JSON.stringify(out)
