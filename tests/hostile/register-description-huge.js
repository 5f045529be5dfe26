// title: a 1M-character description
// expect: error /description/

registerTool('desc', 'x'.repeat(1e6), { type: 'object' }, () => 1)
