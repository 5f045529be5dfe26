// title: the result is a revoked Proxy
// expect: error /revoked/

const { proxy, revoke } = Proxy.revocable({}, {})
revoke()
proxy
