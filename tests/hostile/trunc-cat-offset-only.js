// title: cat(path, {offset}) without a limit on a file longer than one read fails with a limit error, instead of returning 2000 lines as if they were the rest of the file
// expect: result ["limit", 2000]
// tools: Write

await put('long.txt', Array.from({ length: 5000 }, (_, i) => 'l' + i).join('\n') + '\n')
const r = []
r.push(await cat('long.txt', { offset: 10 }).then(() => 'returned', e => e.kind))
r.push((await cat('long.txt', { offset: 10, limit: 2000 })).trimEnd().split('\n').length)
r
