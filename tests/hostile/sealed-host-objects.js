// title: no process, loader, filesystem or network objects
// expect: result ["undefined", "undefined", "undefined", "undefined", "undefined", "undefined", "undefined", "undefined", "undefined"]

[typeof process, typeof std, typeof os, typeof bjson, typeof scriptArgs, typeof fetch, typeof XMLHttpRequest, typeof Deno, typeof Bun]
