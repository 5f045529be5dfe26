// title: Write ../ out of the root
// expect: result "path-escape"
// tools: Write

try { await put('../outside/canary.txt', 'pwned') } catch (e) { e.kind || e.name }
