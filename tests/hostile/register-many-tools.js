// title: registering 100k tools
// expect: error /at most 100 tools/

for (let i = 0; i < 1e5; i++) registerTool('t' + i, 'd', { type: 'object' }, () => 1)
