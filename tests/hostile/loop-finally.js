// title: an infinite loop inside finally
// expect: timeout
// timeout: 200

try { while (true) {} } finally { while (true) {} }
