// title: the name __proto__
// expect: result "eval_registered____proto__"
// then: listTools().map(t => t.name)
// then-expect: result ["__proto__"]

registerTool('__proto__', 'd', { type: 'object' }, () => 1)
