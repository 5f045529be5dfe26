// title: toJSON redirecting a Read outside the root
// expect: result "path-escape"

try { await Read({ toJSON() { return { file_path: '../outside/canary.txt' } } }) } catch (e) { e.kind }
