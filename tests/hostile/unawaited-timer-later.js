// title: a timer armed at the end does not fire into the next evaluation
// expect: result "armed"
// then: await new Promise(r => setTimeout(r, 30)); typeof fired
// then-expect: result "undefined"

setTimeout(() => { globalThis.fired = true }, 5)
'armed'
