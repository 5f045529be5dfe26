// title: three rounds of 1,000 parallel reads of a 50 KB file all return the whole file (no misleading host error under pressure)
// expect: result [3000, true]
// tools: Write
// timeout: 30000

await put('fifty.txt', 'z'.repeat(50 * 1024))
let n = 0, whole = true
for (let round = 0; round < 3; round++) {
  const rs = await Promise.all(Array.from({ length: 1000 }, () => cat('fifty.txt')))
  n += rs.length
  whole = whole && rs.every(r => r.length === 50 * 1024)
}
;[n, whole]
