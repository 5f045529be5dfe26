// title: Read with out-of-range offset and limit
// expect: result true
// setup: files

const out = []
for (const w of [{ offset: -1 }, { limit: 1e308 }, { offset: NaN }, { limit: 0 }, { offset: '1' }]) { try { await Read({ file_path: 'a.txt', ...w }); out.push('ran') } catch (e) { out.push(e.kind) } }
out.every(k => k === 'invalid-input') || out
