// title: setTimeout with a string of code
// expect: error /TypeError/

setTimeout("globalThis.evil = 1", 0)
