// title: throwing a Proxy whose traps throw
// expect: error /./

throw new Proxy({}, { get() { throw new Error('trap') }, has() { throw new Error('has') }, getPrototypeOf() { throw new Error('proto') } })
