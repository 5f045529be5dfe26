// title: Function('return this') is just globalThis
// expect: result true

Function('return this')() === globalThis
