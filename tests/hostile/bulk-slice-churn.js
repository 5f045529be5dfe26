// title: copying a large ArrayBuffer again and again (allocation and copy churn) is stopped: its budget, then the kill (QuickJS polls for interrupts every 10,000 branches, and each iteration is long native work)
// expect: timeout
// expect-reset: /did not stop after its script time budget ran out and was killed/
// timeout: 300

const a = new ArrayBuffer(12 << 20)
while (true) a.slice(0)
