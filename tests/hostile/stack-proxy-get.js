// title: a Proxy get trap recursing into itself
// expect: error /RangeError/

const p = new Proxy({}, { get(t, k, r) { return r[k] } })
p.x
