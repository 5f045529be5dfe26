// title: a schema that is not valid JSON Schema
// expect: error /valid JSON Schema/

registerTool('bad', 'd', { type: 'no-such-type' }, () => 1)
