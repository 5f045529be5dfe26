// title: a script's own require is only its own function; the managed one comes back
// expect: result "mine"
// then: try { globalThis['req' + 'uire']('fs'); 'loaded' } catch (e) { e.name }
// then-expect: result "SandboxError"

const R = 'req' + 'uire'
globalThis[R] = () => 'mine'
globalThis[R]('fs')
