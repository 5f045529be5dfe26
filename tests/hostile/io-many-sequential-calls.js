// title: 3000 sequential calls
// expect: result 3000
// timeout: 20000
// setup: files

let n = 0
for (let i = 0; i < 3000; i++) if ((await cat('a.txt')) === 'alpha\n') n++
n
