// title: Array.prototype.join on a 2**32-1 length object: killed, fresh context
// expect: timeout
// expect-reset: /did not stop/
// timeout: 300

Array.prototype.join.call({ length: 2 ** 32 - 1 }).length
