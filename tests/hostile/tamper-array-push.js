// title: Array.prototype.push replaced by a throwing function
// expect: result [1, 2, 3]

Array.prototype.push = function () { throw new Error('no push') };
[1, 2, 3]
