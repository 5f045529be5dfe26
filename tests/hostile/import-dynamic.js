// title: dynamic import()
// expect: error /SandboxError: .*sealed sandbox/

await import('fs')
