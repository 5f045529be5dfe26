// title: fetch to loopback behind the NAT64 prefix (64:ff9b::7f00:1) is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://[64:ff9b::7f00:1]:9/')
