// title: fetch to the cloud metadata address 169.254.169.254 is refused
// expect: error /not a public address.*--allow-private-network/
// tools: WebFetch

await fetch('http://169.254.169.254/latest/meta-data/')
