// title: Object.defineProperty replaced; managed globals still refresh
// expect: ok
// then: typeof cat
// then-expect: result "function"

Object.defineProperty = () => { throw new Error('no define') }
delete globalThis.cat
'ok'
