// title: Glob ../** finds nothing outside
// expect: result "no leak"
// setup: symlink-escape

const r = await gl('../**/*').catch(e => e.kind)
JSON.stringify(r).includes('canary') ? 'LEAK: ' + JSON.stringify(r) : 'no leak'
