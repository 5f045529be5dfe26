// title: import spelled with an escape inside eval
// expect: error /SandboxError|SyntaxError/

await (0, eval)('\\u0069mport("fs")')
