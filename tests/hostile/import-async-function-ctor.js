// title: the AsyncFunction constructor
// expect: error /Error: .*sealed sandbox/

const AF = (async () => {}).constructor
await AF('return await imp' + 'ort("fs")')()
