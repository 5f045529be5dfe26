// title: Edit without a grant is denied and changes nothing
// expect: result "denied"
// setup: files

try { await Edit({ file_path: 'a.txt', old_string: 'alpha', new_string: 'pwned' }) } catch (e) { e.kind || e.name }
