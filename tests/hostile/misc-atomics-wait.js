// title: Atomics.wait on a shared buffer
// expect: error /ReferenceError/
// timeout: 300

typeof SharedArrayBuffer === 'function' ? Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0) : 'no SAB'
