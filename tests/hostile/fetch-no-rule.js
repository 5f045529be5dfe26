// title: fetch with no WebFetch rule is refused before any request, naming the rule to add
// expect: error /WebFetch\(domain:example.com\)/

await fetch('https://example.com/')
