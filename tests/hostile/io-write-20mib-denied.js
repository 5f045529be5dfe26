// title: a 20 MiB Write without a grant
// expect: result "denied"
// timeout: 10000

try { await put('big.out', 'w'.repeat(20 << 20)) } catch (e) { e.kind }
