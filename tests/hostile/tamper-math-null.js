// title: Math removed, then a typed array result
// expect: result [1, 2, 3]
// known-bug: result rendering of typed arrays uses the realm's Math.min: the value is lost

globalThis.Math = undefined
new Uint8Array([1, 2, 3])
