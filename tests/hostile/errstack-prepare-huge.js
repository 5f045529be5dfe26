// title: Error.prepareStackTrace returning 8 MB
// expect: error /boom/

Error.prepareStackTrace = () => 's'.repeat(8 << 20)
throw new Error('boom')
