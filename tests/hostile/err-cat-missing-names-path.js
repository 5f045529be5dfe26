// title: a read of a missing file fails with an error naming the path as the script wrote it, relative to its root
// expect: result ["not-found", true]

const e = await cat('sub/missing.txt').catch(e => e)
;[e.kind, e.message.includes('sub/missing.txt')]
