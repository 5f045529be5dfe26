// title: calling the internal invoker with an unknown name
// expect: error /no registered tool/

await __wrepl_invoke_registered('nope', {})
