// title: fetch to a unique-local IPv6 address is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://[fd00::1]:9/')
