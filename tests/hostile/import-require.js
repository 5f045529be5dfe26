// title: require()
// expect: error /SandboxError: .*sealed sandbox/

require('child_process').execSync('touch ../outside/pwned')
