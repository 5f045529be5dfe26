// title: rg() over 300,000 matching lines without head_limit fails with a limit error; Grep returns the first lines marked truncated
// expect: result ["limit", true, true]
// setup: many-lines

const e = await rg('needle', { path: 'lines.txt' }).catch(e => e)
const g = await Grep({ pattern: 'needle', path: 'lines.txt', output_mode: 'content' })
;[e.kind, /stopped at a bound/.test(e.message), g.truncated]
