// title: a WebFetch rule for one domain does not cover another, nor a look-alike suffix
// expect: result "denied denied"
// tools: WebFetch(domain:example.com)

const why = (u) => fetch(u).then(() => 'fetched', (e) => /not granted/.test(e.message) ? 'denied' : e.message);
[await why('https://example.com.evil.net/'), await why('https://evilexample.com/')].join(' ')
