// title: globalThis as the result
// expect: ok

globalThis
