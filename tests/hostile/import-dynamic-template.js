// title: dynamic import with a template literal
// expect: error /SandboxError: .*sealed sandbox/

const m = 's'
await import(`f${m}`)
