// title: compiling a Wasm module
// expect: error /ReferenceError/

new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))
