// title: Number.isFinite replaced
// expect: result 5

Number.isFinite = () => false
5
