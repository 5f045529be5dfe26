// title: '; rm -rf ...
// expect: result "same"
// tools: Bash

const x = "'; rm -rf ../outside; '"
const out = await sh('printf %s ' + shQuote(x))
out === x ? 'same' : JSON.stringify(out)
