// title: fetch to a private 10/8 address is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://10.0.0.1:9/')
