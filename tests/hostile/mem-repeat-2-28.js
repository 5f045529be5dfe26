// title: 'x'.repeat(2**28)
// expect: error /RangeError|InternalError/

'x'.repeat(2 ** 28).length
