// title: JSON.parse replaced: tool results are still parsed by the prelude
// expect: result "alpha\n"
// setup: files

JSON.parse = () => ({ evil: true })
await cat('a.txt')
