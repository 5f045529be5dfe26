// title: globalThis frozen
// expect: result "frozen"
// expect-reset: /poisoned/

Object.freeze(globalThis)
'frozen'
