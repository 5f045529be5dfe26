// title: a schema nested 5000 levels
// expect: error /./

let s = { type: 'object' }
for (let i = 0; i < 5000; i++) s = { not: s }
registerTool('deep', 'd', s, () => 1)
