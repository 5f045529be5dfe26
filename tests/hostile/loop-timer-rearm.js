// title: a zero-delay timer that re-arms itself, doing nothing else, under a promise nothing settles
// expect: timeout
// timeout: 200

function f() { setTimeout(f, 0) }
f()
await new Promise(() => {})
