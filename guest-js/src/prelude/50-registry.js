  // ---- dynamic tools --------------------------------------------------------
  const nativeRegister = native.registerTool;
  const nativeUnregister = native.unregisterTool;
  const registered = new MapCtor();
  const NAME_CHARS = /^[a-zA-Z0-9_-]+$/;
  // Every global that exists once the sandbox is configured (so the
  // registration API's own names are in it), and the per-eval `o`: the
  // globals of the boot (captured below, once, in the pre-initialised
  // snapshot) plus those `configure` defines.
  let bootNames = null, configNames = null;
  // The prefix the model calls registered tools by, and the longest name
  // that keeps the whole wire name within an MCP tool name's 64 characters
  // (both set by `configure`, from the host's prefix).
  let registeredPrefix = "", nameMax = 0;
  function setRegisteredPrefix(prefix) {
    registeredPrefix = prefix;
    nameMax = 64 - prefix.length;
  }
  function isBuiltin(name) { return name === "o" || call(SetHas, bootNames, name) || call(SetHas, configNames, name); }
  function toolInfo(name, t) {
    return { name, wireName: registeredPrefix + name, description: t.description, inputSchema: JSONParse(t.schemaJson), displayName: t.displayName };
  }
  define("registerTool", function registerTool(name, description, schema, handler, options) {
    if (typeof name !== "string" || name.length < 1 || name.length > nameMax || call(RegExpExec, NAME_CHARS, name) === null) {
      throw new TypeError("registerTool: the name must match ^[a-zA-Z0-9_-]{1," + nameMax + "}$ (the model calls it as " + registeredPrefix +
        "<name>, and an MCP tool name has at most 64 characters)");
    }
    if (isBuiltin(name)) throw new TypeError("registerTool: " + name + " clashes with a built-in global");
    if (typeof description !== "string") throw new TypeError("registerTool: the description must be a string");
    if (typeof handler !== "function") throw new TypeError("registerTool: the handler must be a function");
    if (schema === null || typeof schema !== "object" || ArrayIsArray(schema)) throw new TypeError("registerTool: the schema must be a JSON Schema object");
    let schemaJson;
    try { schemaJson = JSONStringify(schema); } catch (e) { throw new TypeError("registerTool: the schema is not JSON-serializable: " + describeError(e).message); }
    if (typeof schemaJson !== "string") throw new TypeError("registerTool: the schema is not JSON-serializable");
    let displayName = "";
    if (options !== null && typeof options === "object" && typeof options.displayName === "string") displayName = options.displayName;
    nativeRegister(name, wellFormed(description), schemaJson, wellFormed(displayName));
    call(MapSet, registered, name, { __proto__: null, description, schemaJson, handler, displayName });
    return registeredPrefix + name;
  });
  define("unregisterTool", function unregisterTool(name) {
    const key = wellFormed(StringCtor(name));
    const had = call(MapDelete, registered, key);
    nativeUnregister(key);
    return had;
  });
  define("listTools", function listTools() {
    const out = [];
    const it = call(MapEntries, registered);
    for (let n = 0; ; n++) {
      const r = call(MapIterNext, it);
      if (r.done) break;
      ReflectDefine(out, n, { __proto__: null, value: toolInfo(r.value[0], r.value[1]), writable: true, enumerable: true, configurable: true });
    }
    return out;
  });
  define("getTool", function getTool(name) {
    const t = call(MapGet, registered, StringCtor(name));
    return t ? toolInfo(StringCtor(name), t) : undefined;
  });
  // Used by the host's synthetic invocation script; not for scripts.
  define("__wrepl_invoke_registered", async function (name, input) {
    const t = call(MapGet, registered, name);
    if (!t) throw new SandboxError("no registered tool named " + name);
    let out;
    try {
      out = await t.handler(input);
    } catch (e) {
      if (isError(e)) throw e;
      const err = new ErrorCtor("the tool " + name + " threw a non-Error value: " + safeText(e));
      err.name = "ToolHandlerError";
      throw err;
    }
    return out;
  });

