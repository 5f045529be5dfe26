// title: Write an absolute path outside
// expect: result "path-escape"
// tools: Write

try { await put('{{OUTSIDE}}/new.txt', 'pwned') } catch (e) { e.kind || e.name }
