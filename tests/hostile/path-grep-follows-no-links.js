// title: Grep of the root does not follow links out
// expect: result "no leak"
// setup: symlink-escape

const r = await rg('TOP SECRET|canary').catch(e => e.kind)
JSON.stringify(r).includes('SECRET') || JSON.stringify(r).includes('must never') ? 'LEAK: ' + JSON.stringify(r) : 'no leak'
