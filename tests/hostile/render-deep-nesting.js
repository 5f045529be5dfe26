// title: a result nested 100000 levels deep
// expect: result-matches /\[Object\]/

let v = {}
for (let i = 0; i < 100000; i++) v = { v }
v
