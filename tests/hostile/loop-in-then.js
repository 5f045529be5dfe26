// title: an infinite loop inside a then callback
// expect: timeout
// timeout: 200

await Promise.resolve().then(() => { while (true) {} })
