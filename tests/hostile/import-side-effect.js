// title: bare side-effect import
// expect: error /SandboxError: .*sealed sandbox/

import 'child_process';
1
