// title: console made non-configurable poisons the context
// expect: ok
// expect-reset: /poisoned.*console/
// then: typeof console.log
// then-expect: result "function"

Object.defineProperty(globalThis, 'console', { value: {}, configurable: false })
'x'
