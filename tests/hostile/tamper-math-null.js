// title: Math removed, then a typed array result
// expect: result [1, 2, 3]

globalThis.Math = undefined
new Uint8Array([1, 2, 3])
