// title: a schema with a remote $ref
// expect: error /not a valid JSON Schema/

registerTool('remote', 'd', { $ref: 'http://127.0.0.1:9/evil.json' }, () => 1)
