// title: Edit through a symlink
// expect: result "path-escape"
// tools: Write Edit
// setup: symlink-escape

try { await Edit({ file_path: 'leak.txt', old_string: 'canary', new_string: 'pwned' }) } catch (e) { e.kind || e.name }
