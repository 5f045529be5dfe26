// title: import() evaluated inside a then callback
// expect: error /Error: .*sealed sandbox/

await Promise.resolve().then(() => (0, eval)('imp' + 'ort("x")'))
