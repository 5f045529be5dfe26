// title: a result thenable that resolves to itself
// expect: timeout
// timeout: 500

({ then(r) { r(this) } })
