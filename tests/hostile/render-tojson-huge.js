// title: toJSON returning a huge string is ignored
// expect: result-matches /"v": ?3/

({ v: 3, toJSON() { return 'j'.repeat(50 << 20) } })
