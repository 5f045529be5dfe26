// title: import keyword spelled with a unicode escape
// expect: error /SandboxError|SyntaxError/

await \u0069mport('fs')
