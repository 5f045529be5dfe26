// title: Write without a grant is denied and changes nothing
// expect: result "denied"

try { await put('new.txt', 'x') } catch (e) { e.kind || e.name }
