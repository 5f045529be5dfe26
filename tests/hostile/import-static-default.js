// title: static import of a module
// expect: error /SandboxError: .*sealed sandbox/

import fs from 'fs'
fs.readFileSync('/etc/passwd')
