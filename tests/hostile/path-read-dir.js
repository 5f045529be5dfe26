// title: Read the root directory
// expect: result "invalid-input"

try { await cat('.') } catch (e) { e.kind || e.name }
