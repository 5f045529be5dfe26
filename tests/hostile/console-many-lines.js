// title: 100k small console lines
// expect: result "done"
// expect-stdout: /^0\n1\n/
// timeout: 10000

for (let i = 0; i < 100000; i++) console.log(i)
'done'
