// title: a Function with 100k parameters
// expect: error /RangeError/
// timeout: 5000

new Function(...Array.from({ length: 1e5 }, (_, i) => 'p' + i), 'return 1')()
