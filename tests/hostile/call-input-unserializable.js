// title: inputs JSON cannot write: each call is a rejected promise with the reason, toJSON runs once, and the tool functions stay plain
// expect: result ["TypeError: the input of Read is not JSON-serializable: circular reference", "TypeError: the input of Read is not JSON-serializable: nope", 1, "TypeError: the input of Read is not JSON-serializable: BigInt", "invalid-input", "invalid-input", "Bash TypeError", ["Read", 1, "function", true], [true, false]]
// setup: files

const why = async (p) => { try { await p; return 'resolved' } catch (e) { return e.kind || (e.name + ': ' + e.message.replace(/ \(.*$/, '').replace(/cannot serialize BigInt|BigInt.*$/i, 'BigInt')) } }
const cyclic = {}; cyclic.self = cyclic
let toJSONCalls = 0
const throwing = { toJSON() { toJSONCalls++; throw new Error('nope') } }
const out = []
out.push(await why(Read(cyclic)))
out.push(await why(Read(throwing)))
out.push(toJSONCalls)
out.push(await why(Read({ file_path: 'a.txt', n: 10n })))
// undefined and a function are `{}`: the schema refuses them, nothing runs
out.push(await why(Read()))
out.push(await why(Read(() => 1)))
// the shorthands share the path: a cyclic option is a rejection, not a throw
let shOut
try { const p = sh('true', cyclic); shOut = 'Bash ' + (await p.then(() => 'ok', (e) => e.name)) } catch (e) { shOut = 'threw ' + e.name }
out.push(shOut)
out.push([Read.name, Read.length, typeof Read, Object.getPrototypeOf(Read) === Function.prototype])
// `this` plays no part: the first argument is the input
const read = JSON.stringify(await Read.call({ file_path: 'sub/b.txt' }, { file_path: 'a.txt' }))
out.push([read.includes('alpha'), read.includes('beta')])
out
