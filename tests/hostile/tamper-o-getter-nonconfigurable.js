// title: o replaced by a throwing non-configurable getter
// expect: error /Error: o$/
// expect-reset: /poisoned/

Object.defineProperty(globalThis, 'o', { get() { throw new Error('o') }, configurable: false })
undefined
