// title: import() inside direct eval
// expect: error /Error: .*sealed sandbox/

await eval("import('fs')")
