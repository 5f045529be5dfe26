// title: names of the registerTool API globals
// expect: result ["TypeError", "TypeError", "TypeError", "TypeError"]
// known-bug: builtinNames is snapshotted before registerTool/unregisterTool/listTools/getTool are defined, so those names can be registered

['registerTool', 'unregisterTool', 'listTools', 'getTool'].map(n => { try { registerTool(n, 'd', { type: 'object' }, () => 1); return 'registered' } catch (e) { return e.name } })
