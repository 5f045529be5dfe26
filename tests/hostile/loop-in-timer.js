// title: an infinite loop inside a timer callback
// expect: timeout
// timeout: 200

setTimeout(() => { while (true) {} }, 0)
await new Promise(r => setTimeout(r, 50))
