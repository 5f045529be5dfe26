// title: Promise.prototype.then replaced
// expect: contained
// expect-reset: allowed
// known-bug: a replaced Promise.prototype.then breaks every later evaluation (finish() uses it) and the context is never reset

Promise.prototype.then = function () { return 42 }
7
