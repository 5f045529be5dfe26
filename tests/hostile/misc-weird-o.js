// title: o replaced by a number
// expect: result 42

o = 42
undefined
