// title: a 1 MB schema
// expect: error /64 KiB/

registerTool('big', 'd', { type: 'object', description: 'd'.repeat(1 << 20) }, () => 1)
