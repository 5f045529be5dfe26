// title: Function('return import(...)')
// expect: error /Error: .*sealed sandbox/

await Function("return import('x')")()
