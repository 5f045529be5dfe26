// title: a stack overflow inside a then callback
// expect: error /RangeError/

await Promise.resolve().then(function f() { return f() })
