// title: a handler that is not a function
// expect: error /TypeError/

registerTool('nohandler', 'd', { type: 'object' }, 42)
