// title: Promise.resolve and Promise.all replaced, then a result holding promises
// expect: result {"a": 5, "b": [5, 6]}

const p = new Promise((r) => r(5))
Promise.all = Promise.resolve = Promise.reject = () => { throw new Error('no statics') }
;({ a: p, b: [p, Promise.prototype.then.call(p, (x) => x + 1)] })
