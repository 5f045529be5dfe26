// title: the result is a Proxy of a Map whose ownKeys trap never returns (told apart natively as not a Map, then its keys are read)
// expect: timeout
// timeout: 500
// then: 1 + 1
// then-expect: result 2

new Proxy(new Map([['a', 1]]), { ownKeys() { while (true) {} } })
