// title: Glob with an absolute pattern
// expect: result "no leak"

const r = await gl('{{OUTSIDE}}/*').catch(e => e.kind)
JSON.stringify(r).includes('canary') ? 'LEAK: ' + JSON.stringify(r) : 'no leak'
