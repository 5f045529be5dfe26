// title: fetch to an IPv4-mapped IPv6 loopback address is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://[::ffff:127.0.0.1]:9/')
