// title: TypedArray.set between two large arrays in an endless loop is stopped: its budget, then the kill (QuickJS polls for interrupts every 10,000 branches, and each iteration is long native work)
// expect: timeout
// expect-reset: /did not stop after its script time budget ran out and was killed/
// timeout: 300

const a = new Uint8Array(12 << 20), b = new Uint8Array(12 << 20).fill(1)
while (true) a.set(b)
