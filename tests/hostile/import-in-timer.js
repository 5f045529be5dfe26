// title: import() evaluated inside a timer callback
// expect: error /Error: .*sealed sandbox/

await new Promise((resolve, reject) => setTimeout(() => (0, eval)('imp' + 'ort("x")').then(resolve, reject), 0))
