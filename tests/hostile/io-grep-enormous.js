// title: Grep producing enormous output stays bounded
// expect: result true
// timeout: 10000
// setup: many-lines

const t = await rg('needle')
t.length < 11 * 2 ** 20 && t.split('\n').length <= 10010
