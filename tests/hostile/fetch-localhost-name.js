// title: fetch to a name that resolves only to loopback (localhost) is refused after resolution
// expect: error /localhost resolves only to non-public addresses/
// tools: WebFetch

await fetch('http://localhost:9/')
