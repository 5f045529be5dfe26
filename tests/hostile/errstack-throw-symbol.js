// title: throwing a Symbol
// expect: error /Symbol/

throw Symbol('s')
