// title: o replaced by a Proxy whose traps throw
// expect: error /Error: (proto|keys|get)/

globalThis.o = new Proxy({}, { ownKeys() { throw new Error('keys') }, get() { throw new Error('get') }, getPrototypeOf() { throw new Error('proto') } })
undefined
