// title: static named import from node:fs
// expect: error /SandboxError: .*sealed sandbox/

import { readFileSync } from "node:fs";
readFileSync('/etc/passwd', 'utf8')
