// title: many single quotes and backslashes
// expect: result "same"
// tools: Bash

const x = "''\\''\\\\'\\'" + "'".repeat(50)
const out = await sh('printf %s ' + shQuote(x))
out === x ? 'same' : JSON.stringify(out)
