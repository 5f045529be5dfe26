// title: Glob inside the compile cache, named directly and through a symlink
// expect: result ["protected", "protected", "protected"]
// setup: protected-state

const out = [];
for (const [p, o] of [['cache/*', {}], ['*', { path: 'innocent' }], ['{{ROOT}}/cache/**/*', {}]]) {
  try { out.push((await gl(p, o)).length) } catch (e) { out.push(e.kind || e.name) }
}
out
