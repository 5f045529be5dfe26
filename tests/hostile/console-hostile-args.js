// title: console.log of values with hostile toString/getters
// expect: result "logged"

console.log({ toString() { throw 1 }, get g() { throw 2 } }, new Proxy({}, { ownKeys() { throw 3 } }))
'logged'
