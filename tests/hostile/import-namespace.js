// title: namespace import
// expect: error /SandboxError: .*sealed sandbox/

import * as os from 'os'
os.platform()
