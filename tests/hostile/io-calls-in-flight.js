// title: 2000 calls started at once
// expect: result [true, true]
// timeout: 20000
// setup: files

const rs = await Promise.allSettled(Array.from({ length: 2000 }, () => cat('a.txt')));
[rs.filter(r => r.status === 'fulfilled').length >= 1000, rs.some(r => r.status === 'rejected' && /too many/.test(r.reason.message))]
