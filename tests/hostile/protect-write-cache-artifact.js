// title: overwrite the compiled guest in the compile cache with same-length bytes
// expect: result "protected"
// tools: Write
// setup: protected-state

try { await put('cache/guest.cwasm', 'WREPLCW1 \u0090\u0090\u0090\u0090 jmp rax; shellcode.\n') } catch (e) { e.kind || e.name }
