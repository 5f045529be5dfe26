// title: Read ../ out of the root
// expect: result "path-escape"

try { await cat('../outside/canary.txt') } catch (e) { e.kind || e.name }
