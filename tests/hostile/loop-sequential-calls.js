// title: inner calls awaited one after another forever (each completion returns to the wait loop)
// expect: timeout
// timeout: 300
// setup: files

for (;;) await cat('a.txt')
