// title: a 200 MB Uint8Array
// expect: error /RangeError|InternalError/

new Uint8Array(200 << 20).length
