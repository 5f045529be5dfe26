// title: fetch to [::1] is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://[::1]:9/')
