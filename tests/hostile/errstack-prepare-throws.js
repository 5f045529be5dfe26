// title: Error.prepareStackTrace that throws
// expect: error /Error/

Error.prepareStackTrace = () => { throw new Error('inner') }
null.x
