// title: an Edit of a missing file fails with an error naming the path
// expect: result [true, true]
// tools: Edit

const e = await Edit({ file_path: 'nope/x.txt', old_string: 'a', new_string: 'b' }).catch(e => e)
;[e instanceof Error, e.message.includes('nope/x.txt')]
