// title: the result is a Proxy whose ownKeys never returns
// expect: timeout
// timeout: 300

new Proxy({}, { ownKeys() { while (true) {} } })
