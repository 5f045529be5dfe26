// title: Grep the lines of the store and its WAL through the directory that holds them
// expect: result ["", "", ""]
// setup: protected-state

[await rg('other sessions|wal|shm', { path: 'state' }), await rg('.', { path: 'st', '-C': 5 }),
 await rg('PROTECTED-STATE', { glob: 'state/**' })]
