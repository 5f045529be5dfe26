// title: a toString that recurses via concatenation
// expect: error /RangeError/

const x = { toString() { return 'a' + x } }
'' + x
