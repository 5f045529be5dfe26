// title: a regex with an enormous quantifier
// expect: result false
// timeout: 300

new RegExp('a{1000000000}').test('a')
