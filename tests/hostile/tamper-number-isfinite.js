// title: Number.isFinite replaced
// expect: result 5
// known-bug: result rendering uses the realm's Number.isFinite: every later number result becomes a string

Number.isFinite = () => false
5
