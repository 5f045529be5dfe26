// title: Object.keys replaced
// expect: result {"k": "v"}

Object.keys = () => { throw new Error('keys') };
({ k: 'v' })
