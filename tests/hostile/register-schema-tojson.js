// title: a schema whose toJSON loops
// expect: timeout
// timeout: 300

registerTool('tj', 'd', { toJSON() { while (true) {} } }, () => 1)
