// title: a getter recursing at serialization time
// expect: result-matches /getter threw: RangeError/

const obj = { get a() { return this.a } }
obj
