// title: double quotes and variables
// expect: result "same"
// tools: Bash

const x = '"; touch ../outside/p; " $HOME ${IFS} $((1+1))'
const out = await sh('printf %s ' + shQuote(x))
out === x ? 'same' : JSON.stringify(out)
