// title: Promise.prototype.then throws
// expect: contained
// expect-reset: allowed
// known-bug: a throwing Promise.prototype.then breaks every later evaluation and the context is never reset

Promise.prototype.then = function () { throw new Error('no then') }
7
