// title: cat() with a range running past the end of the file returns the lines there are, with no error (the range is the script's choice)
// expect: result 11
// tools: Write

await put('long.txt', Array.from({ length: 5000 }, (_, i) => 'l' + i).join('\n') + '\n')
;(await cat('long.txt', { offset: 4990, limit: 100 })).trimEnd().split('\n').length
