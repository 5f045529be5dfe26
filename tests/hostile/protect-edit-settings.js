// title: lift the settings file's deny rule for the next session
// expect: result "protected"
// tools: Write Edit
// setup: protected-state

try { await Edit({ file_path: 'settings.json', old_string: '["Bash"]', new_string: '[]' }) } catch (e) { e.kind || e.name }
