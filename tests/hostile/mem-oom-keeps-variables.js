// title: after running out of memory earlier variables are kept
// expect: error /RangeError|InternalError/
// timeout: 10000
// then: kept
// then-expect: result "k"

globalThis.kept = 'k'
const parts = []
while (true) parts.push('z'.repeat(1 << 20) + parts.length)
