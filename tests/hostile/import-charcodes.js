// title: import() assembled from char codes in Function
// expect: error /Error: .*sealed sandbox/

const src = String.fromCharCode(105, 109, 112, 111, 114, 116) + "('fs')"
await Function('return ' + src)()
