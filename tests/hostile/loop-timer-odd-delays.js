// title: timers with NaN, negative, Infinity and huge delays
// expect: result "fired"

setTimeout(() => {}, Infinity); setTimeout(() => {}, 1e308)
await new Promise(r => setTimeout(r, NaN))
await new Promise(r => setTimeout(r, -5))
'fired'
