// title: a Map growing until memory runs out
// expect: error /out of memory/
// expect-reset: allowed
// timeout: 20000
// known-bug: OOM with live data: 'Error: Uncaught null', later evaluations fail or are called 'tampered', then the guest traps (out-of-bounds access: heap corruption after OOM)

const m = new Map()
for (let i = 0; ; i++) m.set(i, { i, s: 'v' + i })
