  // ---- inner calls ----------------------------------------------------------
  // The call's promise is made natively and settled by the Rust side when
  // the call completes (no executor to run, no JavaScript table of pending
  // calls).
  function callTool(name, input) {
    let json;
    try {
      json = JSONStringify(input === undefined ? {} : input);
    } catch (e) {
      return ReflectApply(PromiseReject, PromiseCtor, [new TypeError("the input of " + name + " is not JSON-serializable: " + describeError(e).message)]);
    }
    if (typeof json !== "string") json = "{}";
    try { return nativeStart(name, json); } catch (e) { return ReflectApply(PromiseReject, PromiseCtor, [e]); }
  }
  function makeToolError(name, kind, message) {
    const e = new ErrorCtor(message);
    e.name = "ToolError";
    e.tool = name;
    e.kind = kind;
    return e;
  }

