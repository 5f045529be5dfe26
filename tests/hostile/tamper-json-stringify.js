// title: JSON.stringify replaced by a throwing function
// expect: result {"a": 1}

JSON.stringify = () => { throw new Error('no stringify') };
({ a: 1 })
