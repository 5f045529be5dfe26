// title: an error message with a lone surrogate
// expect: error /bad/

throw new Error('bad \ud800 message')
