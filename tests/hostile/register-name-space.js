// title: a name with a space
// expect: error /TypeError: registerTool: the name/

registerTool('two words', 'd', { type: 'object' }, () => 1)
