// title: Date.now frozen at 0 does not extend the budget
// expect: timeout
// timeout: 300

Date.now = () => 0
performance && (performance.now = () => 0)
while (true) {}
