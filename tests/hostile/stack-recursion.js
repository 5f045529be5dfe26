// title: infinite recursion
// expect: error /RangeError/

function f(n) { return f(n + 1) + 1 }
f(0)
