// title: Promise[Symbol.species] getter that throws
// expect: contained
// expect-reset: allowed
// known-bug: a throwing Promise[Symbol.species] breaks every later evaluation and the context is never reset

Object.defineProperty(Promise, Symbol.species, { get() { throw new Error('species') } })
7
