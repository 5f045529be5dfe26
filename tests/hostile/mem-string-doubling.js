// title: a string doubling until memory runs out
// expect: error /RangeError|InternalError/

let s = 'x'
while (true) s += s
