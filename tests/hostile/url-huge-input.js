// title: a 4 MB URL parses; a 24 MB one fails with a RangeError that names the working memory, and the context lives on
// expect: result "4194306 RangeError"

const ok = new URL('http://x/' + 'a'.repeat(4 << 20)).pathname.length + 1
let name
try { new URL('http://x/' + 'a'.repeat(24 << 20)) } catch (e) { name = e.name }
ok + ' ' + name
