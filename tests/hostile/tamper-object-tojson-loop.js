// title: Object.prototype.toJSON that never returns is not used to render results
// expect: result {"a": 1}

Object.prototype.toJSON = function () { while (true) {} };
({ a: 1 })
