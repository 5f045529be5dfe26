// title: overlapping copyWithin in an endless loop (memmove-style bulk copies) is stopped: its budget, then the kill (QuickJS polls for interrupts every 10,000 branches, and each iteration is long native work)
// expect: timeout
// expect-reset: /did not stop after its script time budget ran out and was killed/
// timeout: 300

const a = new Uint8Array(16 << 20)
while (true) a.copyWithin(1, 0)
