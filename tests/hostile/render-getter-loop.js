// title: a getter that never returns
// expect: timeout
// timeout: 300

({ get a() { while (true) {} } })
