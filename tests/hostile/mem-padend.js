// title: 'x'.padEnd(2**30)
// expect: error /RangeError|InternalError/

'x'.padEnd(2 ** 30).length
