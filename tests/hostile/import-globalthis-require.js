// title: globalThis.require
// expect: error /SandboxError: .*sealed sandbox/

globalThis.require('fs')
