// title: a schema with a cycle
// expect: error /not JSON-serializable/

const s = { type: 'object' }; s.self = s
registerTool('cyc', 'd', s, () => 1)
