// title: fetch of a file: URL is refused (only http and https)
// expect: error /TypeError/
// tools: WebFetch

await fetch('file:///etc/passwd')
