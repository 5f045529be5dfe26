// title: a stack overflow inside a timer callback is reported on stderr
// expect: result "after"
// expect-stderr: /timer callback: RangeError/

setTimeout(function f() { f() }, 0)
await new Promise(r => setTimeout(r, 20))
'after'
