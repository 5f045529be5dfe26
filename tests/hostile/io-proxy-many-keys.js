// title: a Proxy input with 100k keys: an uninterruptible native loop is killed
// expect: timeout
// expect-reset: /did not stop/
// timeout: 300

const p = new Proxy({}, { ownKeys: () => Array.from({ length: 1e5 }, (_, i) => 'k' + i), getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true }), get: () => 1 })
try { await Read(p) } catch (e) { e.kind }
