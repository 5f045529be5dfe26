// title: an invalid array length
// expect: error /RangeError/

new Array(2 ** 32)
