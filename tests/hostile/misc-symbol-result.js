// title: a Symbol as the result
// expect: result "Symbol(s)"

Symbol('s')
