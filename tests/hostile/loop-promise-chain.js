// title: a chain of a million promises runs out of memory with a clear error
// expect: error /out of memory/
// expect-reset: allowed
// timeout: 10000

let p = Promise.resolve(0)
for (let i = 0; i < 1e6; i++) p = p.then(x => x + 1)
await p
