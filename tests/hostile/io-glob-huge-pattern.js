// title: Glob and Grep with a 100,001-character pattern of stars are refused, not a host panic
// expect: result-matches /^invalid-input: the glob pattern is 100001 bytes long.* \| invalid-input: the glob pattern is 100001 bytes long/
// setup: files

const a = await gl('*'.repeat(100000) + 'x').catch(e => e.kind + ': ' + e.message)
const b = await Grep({ pattern: 'alpha', glob: '*'.repeat(100000) + 'x' }).catch(e => e.kind + ': ' + e.message)
a + ' | ' + b
