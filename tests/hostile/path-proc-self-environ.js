// title: Read /proc/self/environ
// expect: result "path-escape"

try { await cat('/proc/self/environ') } catch (e) { e.kind || e.name }
