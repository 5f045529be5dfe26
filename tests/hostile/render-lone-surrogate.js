// title: a result string with a lone surrogate
// expect: ok

'a\ud800b'
