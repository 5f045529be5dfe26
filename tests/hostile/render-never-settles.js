// title: o holds a promise that never settles
// expect: error /never settle|TimeoutError/
// timeout: 500

o.p = new Promise(() => {})
undefined
