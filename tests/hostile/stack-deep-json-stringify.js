// title: JSON.stringify of a 1e5-deep object
// expect: error /RangeError|InternalError/
// known-bug: JSON.stringify of a deeply nested object exhausts the guest's native stack (a trap): the context is killed instead of a RangeError

let v = {}
for (let i = 0; i < 1e5; i++) v = { v }
JSON.stringify(v).length
