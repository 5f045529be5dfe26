// title: Read /proc/self/mem
// expect: result "path-escape"

try { await cat('/proc/self/mem') } catch (e) { e.kind || e.name }
