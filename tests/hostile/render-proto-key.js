// title: a result with an own __proto__ key keeps it
// expect: result {"__proto__": {"x": 1}, "a": 2}

JSON.parse('{"__proto__": {"x": 1}, "a": 2}')
