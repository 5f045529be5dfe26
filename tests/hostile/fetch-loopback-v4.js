// title: fetch to 127.0.0.1 is refused (a non-public address) even with every host allowed
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://127.0.0.1:9/')
