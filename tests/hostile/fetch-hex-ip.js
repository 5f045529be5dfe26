// title: fetch to loopback written in hex (0x7f.1) is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://0x7f.1:9/')
