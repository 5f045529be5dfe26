// title: names of the registerTool API globals
// expect: result ["TypeError", "TypeError", "TypeError", "TypeError"]

['registerTool', 'unregisterTool', 'listTools', 'getTool'].map(n => { try { registerTool(n, 'd', { type: 'object' }, () => 1); return 'registered' } catch (e) { return e.name } })
