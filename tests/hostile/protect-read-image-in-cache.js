// title: read a cache file through the image reader (media path)
// expect: result "protected"
// setup: protected-state

try { const r = await Read({ file_path: 'cache/pic.png' }); r.type } catch (e) { e.kind || e.name }
