// title: fetch to 0.0.0.0 (which Linux connects to loopback) is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://0.0.0.0:9/')
