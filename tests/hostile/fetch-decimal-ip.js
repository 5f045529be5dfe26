// title: fetch to loopback written as one decimal number (2130706433) is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://2130706433:9/')
