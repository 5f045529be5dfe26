// title: a schema whose $ref points to itself
// expect: result "eval_registered__refc"

registerTool('refc', 'd', { $defs: { a: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' }, () => 1)
