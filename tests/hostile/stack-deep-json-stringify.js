// title: JSON.stringify of a 1e5-deep object
// expect: error /RangeError|InternalError/
// timeout: 10000

let v = {}
for (let i = 0; i < 1e5; i++) v = { v }
JSON.stringify(v).length
