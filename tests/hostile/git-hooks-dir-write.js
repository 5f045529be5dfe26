// title: Write to .git/hooks/pre-commit is refused under a broad Write grant (a hook would run on the next commit), and nothing is created there
// expect: result [true, 0]
// tools: Write

const e = await put('.git/hooks/pre-commit', '#!/bin/sh\ntouch pwned\n').catch(e => e)
;[e instanceof Error, (await Glob({ pattern: '.git/**' })).filenames.length]
