  // ---- inner calls ----------------------------------------------------------
  const pending = new MapCtor();
  function callTool(name, input) {
    let json;
    try {
      json = JSONStringify(input === undefined ? {} : input);
    } catch (e) {
      return ReflectApply(PromiseReject, PromiseCtor, [new TypeError("the input of " + name + " is not JSON-serializable: " + describeError(e).message)]);
    }
    if (typeof json !== "string") json = "{}";
    let id;
    try { id = nativeStart(name, json); } catch (e) { return ReflectApply(PromiseReject, PromiseCtor, [e]); }
    return new PromiseCtor((resolve, reject) => { call(MapSet, pending, id, { __proto__: null, resolve, reject, name }); });
  }
  function makeToolError(name, kind, message) {
    const e = new ErrorCtor(message);
    e.name = "ToolError";
    e.tool = name;
    e.kind = kind;
    return e;
  }

