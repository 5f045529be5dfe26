// title: Error replaced
// expect: result "RangeError"

globalThis.Error = function () { return { evil: 1 } }
function f() { return f() }
try { f() } catch (e) { e.name }
