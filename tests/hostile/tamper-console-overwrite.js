// title: console overwritten with a throwing object
// expect: result 5
// then: console.log('back'); 'logged'
// then-expect: result "logged"

globalThis.console = { log() { throw new Error('hijacked') } }
5
