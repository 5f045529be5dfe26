// title: a non-object schema
// expect: error /TypeError/

registerTool('str', 'd', 'string', () => 1)
