// title: the WebFetch tool called directly refuses a non-public address too
// expect: error /not a public address/
// tools: WebFetch

await WebFetch({ url: 'http://127.0.0.1:9/' })
