// title: building and dropping 8 MiB strings in an endless loop is stopped: its budget, then the kill (QuickJS polls for interrupts every 10,000 branches, and each iteration is long native work)
// expect: timeout
// expect-reset: /did not stop after its script time budget ran out and was killed/
// timeout: 300

while (true) 'x'.repeat(8 << 20)
