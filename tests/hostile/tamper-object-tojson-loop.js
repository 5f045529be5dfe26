// title: Object.prototype.toJSON that never returns
// expect: timeout
// timeout: 300

Object.prototype.toJSON = function () { while (true) {} };
({ a: 1 })
