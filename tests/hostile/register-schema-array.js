// title: an array schema
// expect: error /TypeError/

registerTool('arr', 'd', [1], () => 1)
