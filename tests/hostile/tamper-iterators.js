// title: Map, Set and array iteration replaced, then a Map and a Set as the result
// expect: result [{"a": 1}, [1, 2], [3]]
// then: new Map([['b', 2]]).size
// then-expect: error /no array iteration/

const m = new Map([['a', 1]]), s = new Set([1, 2]), a = [3]
const mapIter = Object.getPrototypeOf(new Map().entries()), arrayIter = Object.getPrototypeOf([][Symbol.iterator]())
Map.prototype.entries = Set.prototype.values = Map.prototype.forEach = function () { throw new Error('no iteration') }
Object.defineProperty(mapIter, 'next', { value() { throw new Error('no next') } })
Object.defineProperty(arrayIter, 'next', { value() { throw new Error('no next') } })
Array.prototype[Symbol.iterator] = function () { throw new Error('no array iteration') };
[m, s, a]
