// title: a 10k-character name
// expect: error /TypeError: registerTool: the name/

registerTool('n'.repeat(10000), 'd', { type: 'object' }, () => 1)
