// title: pwd() gives the working directory with no Bash grant, follows chdir() within the evaluation, and the next evaluation starts at the root again
// expect: result [true, true]
// setup: files
// then: (await pwd()).endsWith('/sub')
// then-expect: result false

const first = await pwd()
await chdir('sub')
;[first === '{{ROOT}}', (await pwd()) === '{{ROOT}}/sub']
