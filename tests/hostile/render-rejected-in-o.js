// title: o holds a rejected promise
// expect: error /late/

o.x = Promise.reject(new Error('late'))
undefined
