// title: throwing an object whose name and message getters loop
// expect: timeout
// timeout: 300

throw { get name() { while (true) {} }, get message() { while (true) {} } }
