// title: a 40 MB string result
// expect: result-matches /truncated/
// timeout: 10000

'y'.repeat(40 << 20)
