// title: unregistering a built-in tool has no effect
// expect: result [false, "function"]

[unregisterTool('Bash'), typeof Bash]
