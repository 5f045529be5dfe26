// title: an Object.prototype.then getter installed mid-eval runs when a tool result (settled natively) is resolved; it starts another call and throws
// expect: contained
// setup: files
// then: 1 + 1
// then-expect: result 2
// expect-reset: /Object.prototype.then/

Object.defineProperty(Object.prototype, 'then', {
  configurable: true,
  get() { Read({ file_path: 'a.txt' }); throw new Error('then getter') },
})
const r = await Read({ file_path: 'a.txt' })
r.type
