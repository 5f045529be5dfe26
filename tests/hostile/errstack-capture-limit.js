// title: a huge stackTraceLimit
// expect: ok

Error.stackTraceLimit = Infinity
function f(n) { return n ? f(n - 1) : new Error('deep').stack.length }
f(100)
