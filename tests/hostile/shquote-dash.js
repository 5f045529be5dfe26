// title: a leading dash
// expect: result "same"
// tools: Bash

const x = '-n -e --help'
const out = await sh('printf %s ' + shQuote(x))
out === x ? 'same' : JSON.stringify(out)
