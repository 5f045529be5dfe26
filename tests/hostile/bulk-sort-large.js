// title: sorting a large typed array over and over (long native loops between interrupt checks) is stopped: its budget, then the kill (QuickJS polls for interrupts every 10,000 branches, and each iteration is long native work; the budget leaves the interruptible setup 10× its time)
// expect: timeout
// expect-reset: /did not stop after its script time budget ran out and was killed/
// timeout: 2000

const a = new Float64Array(1 << 20).map((_, i) => (i * 7919) % 1000003)
while (true) { a.reverse(); a.sort() }
