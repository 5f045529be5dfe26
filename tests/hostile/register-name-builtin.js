// title: names of built-in globals
// expect: result ["TypeError", "TypeError", "TypeError", "TypeError"]

['console', 'Read', 'sh', 'JSON'].map(n => { try { registerTool(n, 'd', { type: 'object' }, () => 1); return 'registered' } catch (e) { return e.name } })
