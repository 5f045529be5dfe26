// title: eval of a generated 1 MB program
// expect: ok
// timeout: 5000

eval('1+'.repeat(500000) + '1')
