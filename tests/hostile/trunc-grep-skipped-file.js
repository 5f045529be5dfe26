// title: a file Grep skips (a 70 MB line, past the per-file bound) is counted in the value (skippedFiles) and named on stderr by rg(), not left out silently
// expect: result [1, 1, true]
// expect-stderr: /rgf\("needle"\): 1 file\(s\) could not be read or passed the per-file size bound/
// tools: Bash Write
// timeout: 20000

await put('small.txt', 'needle\n')
await sh('head -c 70000000 /dev/zero | tr "\\0" a > huge.txt')
const g = await Grep({ pattern: 'needle', output_mode: 'files_with_matches' })
const names = await rgf('needle')
;[g.skippedFiles, names.length, names[0].endsWith('small.txt')]
