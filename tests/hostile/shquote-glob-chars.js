// title: glob characters
// expect: result "same"
// tools: Bash

const x = '* ?[a-z] ~ {a,b} !! #'
const out = await sh('printf %s ' + shQuote(x))
out === x ? 'same' : JSON.stringify(out)
