// title: console.log of a lone surrogate
// expect: result "logged"

console.log('half \ud83d')
console.error('\udc00 other half')
'logged'
