// title: Promise.prototype.then throws
// expect: contained
// expect-reset: allowed

Promise.prototype.then = function () { throw new Error('no then') }
7
