// title: 100,000 denied calls: the transcript's records stop at their memory ceiling, and say so
// expect: result 100000
// expect-stderr: /\d+ inner calls are not in this result's transcript: the records of one evaluation hold at most 32 MiB/
// timeout: 60000

let denied = 0
for (let i = 0; i < 100000; i++) {
  try { await Write({ file_path: 'x' + i + '.txt', content: 'x'.repeat(200) }) } catch (e) { if (e.kind === 'denied') denied++ }
}
denied
