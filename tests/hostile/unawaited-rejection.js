// title: an unhandled rejection left behind
// expect: result "done"

Promise.reject(new Error('ignored'))
'done'
