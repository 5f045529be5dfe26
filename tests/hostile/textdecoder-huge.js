// title: TextDecoder of 32 MB of invalid bytes (96 MB of replacement characters) fails with a RangeError, and the context lives on
// expect: result "RangeError 4194304"
// timeout: 10000

let name
try { new TextDecoder().decode(new Uint8Array(32 << 20).fill(0xff)) } catch (e) { name = e.name }
name + ' ' + new TextDecoder().decode(new Uint8Array(4 << 20).fill(0xff)).length
