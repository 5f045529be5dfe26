// title: unicode and control characters
// expect: result "same"
// tools: Bash

const x = 'é 漢字 🙂 \t \r \x1b[31m \x7f'
const out = await sh('printf %s ' + shQuote(x))
out === x ? 'same' : JSON.stringify(out)
