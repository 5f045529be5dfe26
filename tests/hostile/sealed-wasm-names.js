// title: no global name mentions wasm
// expect: result []

Reflect.ownKeys(globalThis).map(String).filter(n => /wasm|webassembly/i.test(n))
