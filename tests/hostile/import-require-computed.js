// title: require looked up by a computed name
// expect: error /SandboxError: .*sealed sandbox/

globalThis['req' + 'uire']('fs')
