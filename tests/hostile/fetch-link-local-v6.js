// title: fetch to a link-local IPv6 address is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://[fe80::1]:9/')
