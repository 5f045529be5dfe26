// title: a Map growing until memory runs out
// expect: error /out of memory/
// expect-reset: allowed
// timeout: 20000

const m = new Map()
for (let i = 0; ; i++) m.set(i, { i, s: 'v' + i })
