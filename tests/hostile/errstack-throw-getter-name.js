// title: throwing an object whose name and message getters loop
// expect: timeout
// timeout: 300
// known-bug: a budget stop while describing the thrown value is reported as a plain Error (timed_out false)

throw { get name() { while (true) {} }, get message() { while (true) {} } }
