// title: a zero-delay timer loop
// expect: timeout
// timeout: 200

for (;;) await new Promise(r => setTimeout(r, 0))
