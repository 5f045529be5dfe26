// title: infinite recursion caught, then more recursion
// expect: result "RangeError"
// then: d(100)
// then-expect: result 100

function d(n) { return n === 0 ? 0 : d(n - 1) + 1 }
try { d(1e7) } catch (e) { e.name }
