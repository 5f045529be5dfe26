// title: rg() with a head_limit larger than what one search returns fails with a limit error, instead of returning the internal bound's matches as if they were all
// expect: result ["limit", 50]
// setup: many-lines

const r = []
r.push(await rg('needle', { path: 'lines.txt', head_limit: 200000 }).then(() => 'returned', e => e.kind))
// A head_limit the search reaches is the script's choice: its lines are returned.
r.push((await rg('needle', { path: 'lines.txt', head_limit: 50 })).trimEnd().split('\n').length)
r
