// title: Object.prototype.toJSON that throws
// expect: result {"a": 1}

Object.prototype.toJSON = function () { throw new Error('toJSON bomb') };
({ a: 1 })
