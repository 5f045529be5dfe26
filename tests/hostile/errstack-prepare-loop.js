// title: Error.prepareStackTrace that never returns
// expect: timeout
// timeout: 300

Error.prepareStackTrace = () => { while (true) {} }
throw new Error('x')
