// title: catching the interrupt and looping again
// expect: timeout
// timeout: 200

for (;;) { try { while (true) {} } catch (e) {} }
