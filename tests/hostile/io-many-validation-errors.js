// title: an input with many schema errors names the first five and counts the rest, instead of dropping them silently
// expect: result [true, true]

const e = await Grep({ pattern: 1, path: 2, glob: 3, output_mode: 4, '-i': 5, '-n': 6, head_limit: 'x', multiline: 7, type: 8 }).catch(e => e)
;[e.kind === 'invalid-input', /; and \d+ more errors?$/.test(e.message)]
