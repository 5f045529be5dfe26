// title: Bash with out-of-range timeouts
// expect: result true
// tools: Bash

const out = []
for (const t of [1e20, -1, 0, 'soon']) { try { await Bash({ command: 'touch ran', timeout: t }); out.push('ran') } catch (e) { out.push(e.kind) } }
out.every(k => k === 'invalid-input') || out
