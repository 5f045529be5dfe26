// title: new Array(2**30) filled
// expect: error /RangeError|InternalError/
// timeout: 5000

new Array(2 ** 30).fill(0).length
