// title: a CR/LF in a request header value is refused (no header injection)
// expect: error /TypeError/
// tools: WebFetch

await fetch('http://93.184.215.14/', { headers: { 'x-a': 'b\r\nx-injected: 1' } })
