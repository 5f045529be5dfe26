// title: fetch to the broadcast address is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://255.255.255.255:9/')
