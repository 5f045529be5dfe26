// title: Read /etc/passwd
// expect: result "path-escape"

try { await cat('/etc/passwd') } catch (e) { e.kind || e.name }
