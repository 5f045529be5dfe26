// title: a result whose then getter throws rejects like any async return
// expect: error /Error: then/

({ get then() { throw new Error('then') }, v: 1 })
