// title: o deleted before the result is taken
// expect: result null
// then: o.x = 1; undefined
// then-expect: result {"x": 1}

delete globalThis.o
undefined
