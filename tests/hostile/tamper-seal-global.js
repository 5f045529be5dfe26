// title: globalThis sealed
// expect: result "sealed"
// expect-reset: /poisoned/

Object.seal(globalThis)
'sealed'
