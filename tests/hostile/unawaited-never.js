// title: a never-settling promise left behind
// expect: result "done"

new Promise(() => {})
'done'
