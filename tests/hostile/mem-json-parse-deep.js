// title: JSON.parse of a million open brackets
// expect: error /SyntaxError|RangeError/

JSON.parse('['.repeat(1e6))
