// title: a 3 MB command line
// expect: result "io"
// tools: Bash

try { (await sh('printf %s ' + shQuote('q'.repeat(3 << 20)))).length } catch (e) { e.kind || e.name }
