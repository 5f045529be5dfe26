// title: a sparse array of length 2**30
// expect: result-matches /…/

new Array(2 ** 30)
