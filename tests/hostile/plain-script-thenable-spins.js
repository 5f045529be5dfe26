// title: a script without await (evaluated as a plain script) completes with a thenable whose then never returns
// expect: timeout
// timeout: 500
// then: 1 + 1
// then-expect: result 2

({ then() { while (true) {} } })
