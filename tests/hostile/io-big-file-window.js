// title: Read of a 40 MiB file with a huge window stays bounded and says so; cat() with that window refuses the cut range
// expect: result [true, true, "limit"]
// timeout: 10000
// setup: big-file

const r = await Read({ file_path: 'big.txt', offset: 1, limit: 1e9 })
;[r.content.length <= 11 * 2 ** 20, r.truncated, await cat('big.txt', { offset: 1, limit: 1e9 }).then(() => 'returned', e => e.kind)]
