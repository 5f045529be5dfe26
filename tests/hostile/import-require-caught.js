// title: require throws a catchable SandboxError
// expect: result "SandboxError"

const r = require
try { r('fs') } catch (e) { e.name }
