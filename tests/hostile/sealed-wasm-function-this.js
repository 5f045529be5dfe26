// title: WebAssembly via Function('return this')
// expect: result ["undefined", false]

const g = Function('return this')();
[typeof g.WebAssembly, 'WebAssembly' in g]
