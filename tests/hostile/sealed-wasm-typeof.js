// title: WebAssembly is absent
// expect: result ["undefined", "undefined"]

[typeof WebAssembly, typeof globalThis.WebAssembly]
