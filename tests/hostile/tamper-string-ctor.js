// title: String replaced by a throwing function
// expect: result "fine"

globalThis.String = function () { throw new Error('no String') }
'fine'
