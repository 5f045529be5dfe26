// title: Promise.prototype.then replaced
// expect: contained
// expect-reset: allowed

Promise.prototype.then = function () { return 42 }
7
