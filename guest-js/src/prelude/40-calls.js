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


  // ---- imports of the configured modules ------------------------------------
  // The host's transform turns `import ... from "m"` and `import("m")` into
  // calls of this: the module's files come through the ImportModule tool (an
  // inner call, recorded like any other), then the loader finds them.
  const registerModule = native.registerModule;
  const modulesLoaded = new SetCtor();
  define("__wrepl_import", async function __wrepl_import(specifier, digest) {
    specifier = StringCtor(specifier);
    if (!call(SetHas, modulesLoaded, specifier)) {
      const input = { specifier };
      if (typeof digest === "string") input.sha256 = digest;
      const r = await callTool("ImportModule", input);
      registerModule(specifier, StringCtor(r.entry), r.files);
      call(SetAdd, modulesLoaded, specifier);
    }
    return import(specifier);
  });
