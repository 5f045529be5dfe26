// title: fetch to a shared (CGNAT) address 100.64.0.1 is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://100.64.0.1:9/')
