// title: more background commands than a context may hold: the 17th is refused with a message that says how to make room, and the 16 end with the context
// expect: result-matches /^16 started; refused: .*already has 16 background commands.*TaskOutput/
// tools: Bash
// timeout: 20000

let started = 0, refused = ''
for (let i = 0; i < 17; i++) {
  try { await Bash({ command: 'sleep 30', run_in_background: true }); started++ } catch (e) { refused = e.message }
}
`${started} started; refused: ${refused}`
