// title: a result with a million keys
// expect: result-matches /truncated/
// timeout: 5000

const w = {}
for (let i = 0; i < 2e5; i++) w['k' + i] = i
w
