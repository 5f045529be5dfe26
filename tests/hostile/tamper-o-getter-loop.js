// title: o as a getter that never returns
// expect: timeout
// timeout: 300

Object.defineProperty(globalThis, 'o', { get() { while (true) {} }, configurable: true })
undefined
