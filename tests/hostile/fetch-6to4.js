// title: fetch to loopback behind a 6to4 address (2002:7f00:1::) is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://[2002:7f00:1::]:9/')
