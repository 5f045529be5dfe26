// title: 2000 calls started at once all run (the guest queues past the host's 1,024 in flight)
// expect: result [true, true]
// timeout: 20000
// setup: files

const rs = await Promise.allSettled(Array.from({ length: 2000 }, () => cat('a.txt')));
[rs.filter(r => r.status === 'fulfilled').length === 2000, new Set(rs.map(r => r.value)).size === 1]
