// title: Symbol.toPrimitive on Object.prototype that throws
// expect: result {"a": 1}

Object.prototype[Symbol.toPrimitive] = () => { throw new Error('prim') };
({ a: 1 })
