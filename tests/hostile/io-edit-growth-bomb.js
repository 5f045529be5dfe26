// title: Edit replace_all of 1 MB of "a" by 1 MB strings is refused before allocating 1 TB
// expect: result-matches /^invalid-input: the edit would make .* 1000000000000 bytes .*; size 1000000$/
// tools: Write Edit
// timeout: 10000

await put('bomb.txt', 'a'.repeat(1000000))
const r = await Edit({ file_path: 'bomb.txt', old_string: 'a', new_string: 'b'.repeat(1000000), replace_all: true })
  .then(() => 'edited', e => e.kind + ': ' + e.message)
r + '; size ' + (await cat('bomb.txt')).length
