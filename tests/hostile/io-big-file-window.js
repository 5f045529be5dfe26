// title: Read of a 40 MiB file with a huge window stays bounded
// expect: result true
// timeout: 10000
// setup: big-file

const t = await cat('big.txt', { offset: 1, limit: 1e9 })
t.length <= 11 * 2 ** 20
