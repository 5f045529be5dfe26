// title: a Write outside the roots fails with an error naming the path it refused, and nothing is written there
// expect: result [true, true]
// tools: Write

const e = await put('{{OUTSIDE}}/escape.txt', 'x').catch(e => e)
;[e instanceof Error, e.message.includes('escape.txt')]
