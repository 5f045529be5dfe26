// title: Object.prototype.then defined: the next evaluation runs in a fresh context
// expect: contained
// expect-reset: /Object.prototype.then/
// then: 1 + 1
// then-expect: result 2

Object.prototype.then = function (resolve) { resolve(42) }
7
