// title: shQuote of an object with a throwing toString
// expect: error /hostile toString/
// tools: Bash

shQuote({ toString() { throw new Error('hostile toString') } })
