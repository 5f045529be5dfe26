// title: 60 MiB of console output
// expect: result "end"
// expect-stderr: /console output exceeded/
// timeout: 10000

const line = 'z'.repeat(1 << 20)
for (let i = 0; i < 60; i++) console.log(line)
'end'
