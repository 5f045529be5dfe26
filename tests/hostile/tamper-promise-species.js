// title: Promise[Symbol.species] getter that throws
// expect: contained
// expect-reset: allowed

Object.defineProperty(Promise, Symbol.species, { get() { throw new Error('species') } })
7
