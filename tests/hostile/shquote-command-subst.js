// title: $(...) substitution
// expect: result "same"
// tools: Bash

const x = '$(rm -f ../outside/canary.txt)'
const out = await sh('printf %s ' + shQuote(x))
out === x ? 'same' : JSON.stringify(out)
