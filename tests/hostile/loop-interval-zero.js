// title: setInterval 0 and a promise only the interval could settle
// expect: timeout
// timeout: 300

let n = 0
setInterval(() => { n++; for (let i = 0; i < 1e5; i++); }, 0)
await new Promise(r => { if (n < 0) r() })
