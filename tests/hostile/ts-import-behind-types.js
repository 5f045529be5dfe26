// title: a dynamic import in TypeScript: the types are stripped, the sealed-sandbox scan still refuses it
// expect: error /SandboxError: .*sealed sandbox/

const m: unknown = await import(/* typed */ 'fs' as string)
