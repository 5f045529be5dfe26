// title: the result is a Proxy whose ownKeys throws
// expect: error /trap/

new Proxy({}, { ownKeys() { throw new Error('trap') } })
