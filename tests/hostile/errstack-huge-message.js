// title: an error whose message is 20 MB
// expect: error /^Error: x{100}/

throw new Error('x'.repeat(20 << 20))
