// title: Grep producing enormous output stays bounded, and rg() says it was cut instead of returning part
// expect: result true
// timeout: 10000
// setup: many-lines

const cut = await rg('needle').then(() => null, e => e)
const g = await Grep({ pattern: 'needle', output_mode: 'content' })
cut !== null && cut.kind === 'limit' && /stopped at a bound/.test(cut.message) &&
  g.truncated === true && g.content.length < 11 * 2 ** 20 && g.content.split('\n').length <= 10010
