// title: queueMicrotask and timers still work with Promise.prototype.then replaced
// expect: result "tq"

Promise.prototype.then = function () { throw new Error('no then') }
let log = ''
queueMicrotask(() => { log += 'q' })
setTimeout(() => { log = 't' + log }, 0)
await new Promise((r) => setTimeout(r, 5))
log
