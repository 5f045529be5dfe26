// title: a huge BigInt
// expect: error /RangeError/
// timeout: 1000

(2n ** 100000000n).toString().length
