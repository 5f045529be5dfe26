// title: Array.prototype.push replaced by a throwing function
// expect: result [1, 2, 3]
// known-bug: result rendering uses the realm's Array.prototype.push: the value is lost ('[unrenderable value]')

Array.prototype.push = function () { throw new Error('no push') };
[1, 2, 3]
