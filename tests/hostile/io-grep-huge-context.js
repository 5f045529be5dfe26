// title: Grep with a huge context
// expect: ok
// timeout: 10000
// setup: many-lines

(await rg('needle 0000001', { '-C': 1e9 })).length
