// title: 100k setTimeout calls
// expect: error /too many timers/
// then: await new Promise(r => setTimeout(r, 1)); 'timers work'
// then-expect: result "timers work"

for (let i = 0; i < 100000; i++) setTimeout(() => {}, 1e9)
