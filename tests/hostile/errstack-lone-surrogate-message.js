// title: an error message with a lone surrogate
// expect: error /bad/
// known-bug: an error message containing a lone surrogate reaches the host as an empty message

throw new Error('bad \ud800 message')
