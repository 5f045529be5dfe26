// title: a name that is an object with toString
// expect: error /TypeError/

registerTool({ toString() { return 'ok' } }, 'd', { type: 'object' }, () => 1)
