// title: a TypeScript line that relies on an automatic semicolon after `as` is refused, never run as a call
// expect: error /SyntaxError: .*end the line with `;`/

globalThis.called = false
const f = () => { globalThis.called = true }
const g = f as unknown
(0)
