// title: cat(path, {offset, limit}) over lines whose bytes pass one read's 10 MiB bound fails with a limit error naming where it stopped, instead of returning fewer lines than asked as if that were the range
// expect: result ["limit", true, 3]
// tools: Write

const line = 'y'.repeat(4 << 20) + '\n'
await put('wide.txt', line + line + line + 'end\n')
const r = []
const e = await cat('wide.txt', { offset: 1, limit: 4 }).catch(e => e)
r.push(e.kind)
r.push(/ended at line \d+ of the lines asked for/.test(e.message))
// A range within the bound is returned as asked.
r.push((await cat('wide.txt', { offset: 3, limit: 2 })).split('\n').length)
r
