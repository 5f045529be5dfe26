// title: a 5,000,002-character result comes back cut, and its marker states the true total
// expect: result-matches /of 5000002 characters/

'x'.repeat(5000002)
