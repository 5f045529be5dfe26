// title: dynamic import with newlines between import and (
// expect: error /SandboxError: .*sealed sandbox/

await import
  (
    'fs'
  )
