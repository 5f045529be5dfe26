// title: import.meta
// expect: error /SandboxError: .*sealed sandbox/

import.meta.url
