// title: Promise.all over 10,000 reads completes: the calls past the in-flight limit wait in a queue, none fails
// expect: result [10000, true]
// setup: files
// timeout: 30000

const rs = await Promise.all(Array.from({ length: 10000 }, () => cat('a.txt')))
;[rs.length, rs.every(r => r === 'alpha\n')]
