// title: a 100 MiB tool input string
// expect: error /RangeError|InternalError|memory/
// expect-reset: allowed
// timeout: 10000

await Grep({ pattern: 'x'.repeat(100 << 20) })
