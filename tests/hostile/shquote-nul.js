// title: a NUL byte in a quoted argument
// expect: result "invalid-input"
// tools: Bash

try { await sh('printf %s ' + shQuote('a\0; touch ../outside/pwned')) } catch (e) { e.kind || e.name }
