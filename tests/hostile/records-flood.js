// title: 70,000 denied calls, a thousand at a time: the transcript's records stop at their memory ceiling (about 57,000 of these), and say so
// expect: result 70000
// expect-stderr: /\d+ inner calls are not in this result's transcript: the records of one evaluation hold at most 32 MiB/
// timeout: 60000

let denied = 0
for (let b = 0; b < 70; b++) {
  const batch = []
  for (let i = 0; i < 1000; i++) {
    batch.push(Write({ file_path: 'x' + (b * 1000 + i) + '.txt', content: 'x'.repeat(200) })
      .catch(e => { if (e.kind === 'denied') denied++ }))
  }
  await Promise.all(batch)
}
denied
