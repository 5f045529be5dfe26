// title: fetch to loopback written in octal (0177.0.0.1) is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://0177.0.0.1:9/')
