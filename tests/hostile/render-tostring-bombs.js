// title: toString/valueOf/toJSON bombs are not called
// expect: result-matches /"v": 2|"v":2/

({ v: 2, toString() { while (true) {} }, valueOf() { while (true) {} }, toJSON() { while (true) {} } })
