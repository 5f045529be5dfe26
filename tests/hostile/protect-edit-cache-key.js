// title: replace the compile cache's MAC key with a known one
// expect: result "protected"
// tools: Write Edit
// setup: protected-state

try { await Edit({ file_path: 'cache/cache.key', old_string: 'key material', new_string: 'KNOWN KEY!!!' }) } catch (e) { e.kind || e.name }
