// title: Read of a 5,000-line file without a range returns 2,000 lines with truncated and totalLines, so the script can tell it has a part
// expect: result [true, 2000, 5000, 1]
// tools: Write

await put('long.txt', Array.from({ length: 5000 }, (_, i) => 'line ' + i).join('\n') + '\n')
const r = await Read({ file_path: 'long.txt' })
;[r.truncated, r.numLines, r.totalLines, r.startLine]
