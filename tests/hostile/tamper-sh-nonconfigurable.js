// title: sh made non-configurable poisons the context
// expect: ok
// expect-reset: /poisoned.*sh/
// then: typeof sh
// then-expect: result "function"

Object.defineProperty(globalThis, 'sh', { value: 1, configurable: false, writable: false })
'defined'
