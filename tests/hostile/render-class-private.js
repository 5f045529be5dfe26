// title: a class instance with private fields and a Symbol
// expect: ok

class K { #s = 1; x = Symbol('q'); get y() { return this.#s } }
new K()
