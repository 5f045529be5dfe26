// title: Grep of a root holding a named pipe does not hang
// expect: result-matches /a\.txt:1:alpha/
// setup: fifo files

await rg('alpha')
