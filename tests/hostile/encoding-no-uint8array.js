// title: TextEncoder after a script deleted Uint8Array fails cleanly
// expect: ok

delete globalThis.Uint8Array; try { new TextEncoder().encode('x') } catch (e) { String(e) }
