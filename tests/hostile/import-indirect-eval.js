// title: import() built by concatenation in indirect eval
// expect: error /Error: .*sealed sandbox/

await (0, eval)('imp' + 'ort("fs")')
