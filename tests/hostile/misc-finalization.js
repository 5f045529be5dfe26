// title: a FinalizationRegistry callback that loops
// expect: timeout
// timeout: 300

const fr = new FinalizationRegistry(() => { while (true) {} })
for (let i = 0; i < 1000; i++) fr.register({}, i)
'registered'
