// title: a 1 GiB ArrayBuffer
// expect: error /RangeError|InternalError/

new ArrayBuffer(2 ** 30).byteLength
