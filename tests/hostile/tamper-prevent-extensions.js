// title: globalThis made non-extensible
// expect: result "ok"
// then: typeof cat
// then-expect: result "function"

Object.preventExtensions(globalThis)
'ok'
