// title: deleting a managed global; it comes back next time
// expect: result "undefined"
// then: typeof cat
// then-expect: result "function"

delete globalThis.cat
typeof cat
