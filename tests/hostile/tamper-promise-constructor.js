// title: Promise.prototype.constructor made a throwing getter
// expect: result 7
// then: 1 + 1
// then-expect: result 2

Object.defineProperty(Promise.prototype, 'constructor', { get() { throw new Error('ctor') } })
7
