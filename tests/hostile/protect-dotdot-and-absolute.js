// title: reach the settings file by `..`, an absolute path, `.` and a trailing slash
// expect: result ["protected", "protected", "protected", "protected", "protected"]
// tools: Write
// setup: protected-state

const out = [];
for (const p of ['nope/../settings.json', 'hooks/../settings.json', '{{ROOT}}/settings.json',
                 '{{ROOT}}/../root/./settings.json', './settings.json/.']) {
  try { await put(p, '{}'); out.push('ok') } catch (e) { out.push(e.kind || e.name) }
}
out
