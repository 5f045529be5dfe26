// title: catastrophic regex backtracking
// expect: timeout
// timeout: 300

/(a+)+$/.test('a'.repeat(40) + 'b')
