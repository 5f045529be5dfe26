// title: haiku with no sampler configured
// expect: error /./

await haiku('hello')
