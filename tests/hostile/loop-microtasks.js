// title: for (;;) await 0
// expect: timeout
// timeout: 200

for (;;) await 0
