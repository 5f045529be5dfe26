// title: gl() over more files than one Glob lists (150 > 100) fails with a limit error naming the total, while Glob returns the 100 with truncated and totalFiles
// expect: result ["limit", true, true, 100, 150]
// tools: Write

for (let i = 0; i < 150; i++) await put('many/f' + i + '.txt', 'x')
const e = await gl('many/*.txt').catch(e => e)
const g = await Glob({ pattern: 'many/*.txt' })
;[e.kind, /150 files match/.test(e.message), g.truncated, g.filenames.length, g.totalFiles]
