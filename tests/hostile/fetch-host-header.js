// title: a Host header cannot redirect a request to another virtual host than the rule allows
// expect: error /header "Host" may not be set/
// tools: WebFetch(domain:example.com)

await WebFetch({ url: 'http://example.com/', headers: [['Host', 'evil.example']] })
