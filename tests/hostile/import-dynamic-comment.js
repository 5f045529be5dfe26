// title: dynamic import with a comment inside the parentheses
// expect: error /SandboxError: .*sealed sandbox/

await import(/* sneaky */ 'fs')
