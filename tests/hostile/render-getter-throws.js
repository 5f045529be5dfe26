// title: getters that throw at serialization time
// expect: result-matches /getter threw/

({ get a() { throw new Error('no') }, ok: 1 })
