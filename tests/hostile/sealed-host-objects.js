// title: no process, loader, filesystem or raw network objects (fetch is the WebFetch tool: refused by default, see fetch-no-rule.js)
// expect: result ["undefined", "undefined", "undefined", "undefined", "undefined", "undefined", "undefined", "undefined", "undefined"]

[typeof process, typeof std, typeof os, typeof bjson, typeof scriptArgs, typeof WebSocket, typeof XMLHttpRequest, typeof Deno, typeof Bun]
