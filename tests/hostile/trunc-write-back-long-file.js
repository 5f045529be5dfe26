// title: reading a 5,000-line file with cat() and writing it back cannot truncate it on disk: cat() refuses the part, so nothing is written
// expect: result ["limit", 5000]
// tools: Write

await put('data.txt', Array.from({ length: 5000 }, (_, i) => 'row ' + i).join('\n') + '\n')
let kind = 'written'
try { await put('data.txt', (await cat('data.txt')).toUpperCase()) } catch (e) { kind = e.kind }
const r = await Read({ file_path: 'data.txt', limit: 1 })
;[kind, r.totalLines]
