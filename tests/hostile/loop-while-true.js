// title: while (true) {}
// expect: timeout
// timeout: 200
// then: 1 + 2
// then-expect: result 3

while (true) {}
