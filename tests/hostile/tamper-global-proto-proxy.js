// title: globalThis's prototype replaced by a throwing Proxy
// expect: result "set"

Object.setPrototypeOf(globalThis, new Proxy({}, { get() { throw new Error('proto trap') }, has() { throw new Error('has trap') } }))
'set'
