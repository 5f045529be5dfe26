  // ---- inner calls ----------------------------------------------------------
  // The call's promise is made natively and settled by the Rust side when
  // the call completes (no executor to run, no JavaScript table of pending
  // calls). `callTool(name, input)` never throws: an input that is not
  // JSON-serializable, or a call the host refuses to start, is a rejected
  // promise. Each tool's global is a native function of its own
  // (`native.toolFunction`), so an inner call runs no prelude JavaScript.
  const callTool = native.callTool;
  const nativeToolFunction = native.toolFunction;
  native.setInputRejected(function inputRejected(name, e) {
    return ReflectApply(PromiseReject, PromiseCtor, [new TypeError("the input of " + name + " is not JSON-serializable: " + describeError(e).message)]);
  });
  function makeToolError(name, kind, message) {
    const e = new ErrorCtor(message);
    e.name = "ToolError";
    e.tool = name;
    e.kind = kind;
    const stack = e.stack;
    if (typeof stack === "string") e.stack = scriptFrames(stack);
    return e;
  }

