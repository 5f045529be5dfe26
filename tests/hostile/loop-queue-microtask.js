// title: a self-requeueing microtask
// expect: timeout
// timeout: 200

function f() { queueMicrotask(f) }
f()
await new Promise(() => setTimeout(() => {}, 1e9))
