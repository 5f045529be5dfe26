// title: fetch to a Teredo address (which hides an IPv4 address) is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://[2001::5efe:7f00:1]:9/')
