// title: JSON.parse of a million open brackets
// expect: error /SyntaxError|RangeError/
// known-bug: JSON.parse of deeply nested input exhausts the guest's native stack (a trap): the context is killed instead of a catchable error

JSON.parse('['.repeat(1e6))
