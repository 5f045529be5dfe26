// title: cyclic result through arrays and maps
// expect: result-matches /Circular/

const a = [1]; const m = new Map([['a', a]]); a.push(m, a);
({ a, m })
