// title: new Function('return import(...)')
// expect: error /Error: .*sealed sandbox/

await new Function("return import('x')")()
