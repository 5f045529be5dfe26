// title: an export statement
// expect: error /SandboxError: .*sealed sandbox/

export const stolen = 1
