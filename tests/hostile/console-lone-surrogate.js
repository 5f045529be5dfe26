// title: console.log of a lone surrogate
// expect: result "logged"
// known-bug: console.log of a string with a lone surrogate throws 'Conversion from string failed: invalid utf-8' instead of printing it (U+FFFD)

console.log('half \ud83d')
console.error('\udc00 other half')
'logged'
