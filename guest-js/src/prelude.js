// wrepl managed globals. Evaluated once per runtime; the completion value is a
// function the Rust side calls with the native bridge and the tool list. It
// returns the control object that drives each evaluation. Nothing here is
// trusted by the host: every import re-validates what it receives.
(function (native, tools, repoHint) {
  "use strict";
  const G = globalThis;
  const ObjectKeys = Object.keys;
  const ObjectDefine = Object.defineProperty;
  const ObjectGetProto = Object.getPrototypeOf;
  const ArrayIsArray = Array.isArray;
  const JSONStringify = JSON.stringify;
  const JSONParse = JSON.parse;
  const PromiseCtor = Promise;
  const PromiseResolve = Promise.resolve.bind(Promise);
  const MapCtor = Map;
  const SetCtor = Set;
  const ErrorCtor = Error;
  const StringCtor = String;
  const FunctionToString = Function.prototype.toString;
  const nativeStart = native.startCall;
  const nativeSetTimer = native.setTimer;
  const nativeClearTimer = native.clearTimer;
  const nativeWrite = native.write;
  const SEALED = native.sealed;

  // Managed globals, refreshed at the start of every evaluation.
  const managed = new Map();
  function define(name, value) {
    ObjectDefine(G, name, { value, writable: true, configurable: true, enumerable: false });
    managed.set(name, value);
  }

  // ---- errors -------------------------------------------------------------
  class SandboxError extends ErrorCtor {
    constructor(message) { super(message); this.name = "SandboxError"; }
  }
  class UnawaitedPromiseError extends TypeError {
    constructor(hint) {
      super("a Promise was used as a " + hint + " value: it has not been awaited. " +
        "Write `await <expression>` (or `await Promise.all([...])`) to use its result.");
      this.name = "UnawaitedPromiseError";
    }
  }
  define("SandboxError", SandboxError);
  define("UnawaitedPromiseError", UnawaitedPromiseError);
  ObjectDefine(PromiseCtor.prototype, Symbol.toPrimitive, {
    value: function (hint) { throw new UnawaitedPromiseError(hint === "number" ? "number" : "string"); },
    writable: true, configurable: true, enumerable: false,
  });
  ObjectDefine(PromiseCtor.prototype, "toString", {
    value: function () { throw new UnawaitedPromiseError("string"); },
    writable: true, configurable: true, enumerable: false,
  });

  // ---- sealed: no modules, no WebAssembly ----------------------------------
  define("require", function require() { throw new SandboxError(SEALED); });
  delete G.WebAssembly;
  Math.random = native.random;

  // ---- safe rendering -----------------------------------------------------
  const MAX_DEPTH = 24;
  const MAX_ITEMS = 10000;
  const MAX_TEXT = 2000000;

  function isThenable(v) {
    if ((typeof v !== "object" && typeof v !== "function") || v === null) return false;
    try { return typeof v.then === "function"; } catch (_) { return false; }
  }

  function fnName(f) {
    let n = "";
    try { n = f.name; } catch (_) { }
    return typeof n === "string" && n ? n : "(anonymous)";
  }

  // Convert any value to JSON-compatible data (no getters run twice, cycles
  // and depth bounded, exotic values described). Proxies and hostile getters
  // run guest code only; the host parses the JSON text it receives.
  function toData(v, depth, seen, budget) {
    if (budget.n++ > MAX_ITEMS) return "[…]";
    switch (typeof v) {
      case "string": return v;
      case "number": return Number.isFinite(v) ? v : StringCtor(v);
      case "boolean": return v;
      case "undefined": return null;
      case "bigint": return StringCtor(v) + "n";
      case "symbol": return v.toString();
      case "function": return "[Function: " + fnName(v) + "]";
    }
    if (v === null) return null;
    if (seen.has(v)) return "[Circular]";
    if (depth >= MAX_DEPTH) return ArrayIsArray(v) ? "[Array]" : "[Object]";
    seen.add(v);
    try {
      if (v instanceof ErrorCtor) {
        const e = describeError(v);
        return { name: e.name, message: e.message, stack: e.stack };
      }
      if (v instanceof PromiseCtor) return "[Promise]";
      if (v instanceof Date) { const t = v.getTime(); return t === t ? v.toISOString() : "Invalid Date"; }
      if (v instanceof MapCtor) {
        const out = {};
        for (const [k, val] of v) {
          if (budget.n++ > MAX_ITEMS) break;
          out[typeof k === "string" ? k : safeText(k)] = toData(val, depth + 1, seen, budget);
        }
        return out;
      }
      if (v instanceof SetCtor) {
        const out = [];
        for (const val of v) { if (budget.n > MAX_ITEMS) break; out.push(toData(val, depth + 1, seen, budget)); }
        return out;
      }
      if (ArrayBuffer.isView(v)) {
        const out = [];
        const n = Math.min(v.length | 0, MAX_ITEMS);
        for (let i = 0; i < n; i++) out.push(toData(v[i], depth + 1, seen, budget));
        return out;
      }
      if (ArrayIsArray(v)) {
        const out = [];
        const n = v.length;
        for (let i = 0; i < n; i++) {
          if (budget.n > MAX_ITEMS) { out.push("[…]"); break; }
          out.push(toData(v[i], depth + 1, seen, budget));
        }
        return out;
      }
      const out = {};
      for (const k of ObjectKeys(v)) {
        if (budget.n > MAX_ITEMS) { out["…"] = "[truncated]"; break; }
        let val;
        try { val = v[k]; } catch (e) { val = "[getter threw: " + safeText(e) + "]"; }
        if (val === undefined) continue;
        out[k] = toData(val, depth + 1, seen, budget);
      }
      return out;
    } finally {
      seen.delete(v);
    }
  }

  function safeText(v) {
    try {
      if (typeof v === "string") return v;
      if (v === undefined) return "undefined";
      if (typeof v === "symbol") return v.toString();
      if (typeof v === "function") return "[Function: " + fnName(v) + "]";
      if (v instanceof ErrorCtor) { const e = describeError(v); return e.name + ": " + e.message; }
      const data = toData(v, 0, new SetCtor(), { n: 0 });
      if (typeof data === "string" && typeof v !== "object") return data;
      let t = JSONStringify(data);
      if (t === undefined) return "undefined";
      // Short values on one line, longer ones indented.
      if (t.length > 80) t = JSONStringify(data, null, 2);
      return t;
    } catch (e) {
      return "[unrenderable value]";
    }
  }

  function str(v) {
    const t = safeText(v);
    return t.length > MAX_TEXT ? t.slice(0, MAX_TEXT) + "…[truncated]" : t;
  }
  define("str", str);

  function describeError(e) {
    let name = "Error", message = "", stack = "";
    try {
      if (e instanceof ErrorCtor || (typeof e === "object" && e !== null && "message" in e)) {
        try { const n = e.name; if (typeof n === "string") name = n; } catch (_) { }
        try { const m = e.message; message = typeof m === "string" ? m : safeText(m); } catch (_) { }
        try { const s = e.stack; if (typeof s === "string") stack = s; } catch (_) { }
      } else {
        message = "Uncaught " + safeText(e);
      }
    } catch (_) {
      message = "[undescribable exception]";
    }
    return { name, message, stack };
  }

  // ---- console ------------------------------------------------------------
  function fmt(args) {
    let s = "";
    for (let i = 0; i < args.length; i++) {
      if (i) s += " ";
      const a = args[i];
      s += typeof a === "string" ? a : safeText(a);
    }
    return s + "\n";
  }
  const counts = new MapCtor();
  const consoleObj = {
    log(...a) { nativeWrite(1, fmt(a)); },
    info(...a) { nativeWrite(1, fmt(a)); },
    debug(...a) { nativeWrite(1, fmt(a)); },
    trace(...a) { nativeWrite(2, fmt(a)); },
    warn(...a) { nativeWrite(2, fmt(a)); },
    error(...a) { nativeWrite(2, fmt(a)); },
    dir(v) { nativeWrite(1, fmt([v])); },
    table(v) { nativeWrite(1, fmt([v])); },
    assert(c, ...a) { if (!c) nativeWrite(2, fmt(["Assertion failed:", ...a])); },
    count(label = "default") { const n = (counts.get(label) || 0) + 1; counts.set(label, n); nativeWrite(1, label + ": " + n + "\n"); },
  };
  define("console", consoleObj);

  // ---- timers -------------------------------------------------------------
  const timers = new MapCtor();
  let nextTimer = 1;
  function armTimer(fn, ms, args, repeat) {
    if (typeof fn !== "function") throw new TypeError("the timer callback must be a function");
    const id = nextTimer++;
    if (nextTimer > 0x7fffffff) nextTimer = 1;
    ms = Number(ms);
    if (!(ms >= 0)) ms = 0;
    if (!nativeSetTimer(id, ms)) throw new RangeError("too many timers are armed (limit 10000)");
    timers.set(id, { fn, args, ms, repeat });
    return id;
  }
  function clearTimer(id) {
    id = Number(id);
    if (timers.delete(id)) nativeClearTimer(id);
  }
  define("setTimeout", function setTimeout(fn, ms, ...args) { return armTimer(fn, ms, args, false); });
  define("setInterval", function setInterval(fn, ms, ...args) { return armTimer(fn, ms, args, true); });
  define("clearTimeout", clearTimer);
  define("clearInterval", clearTimer);
  define("queueMicrotask", function queueMicrotask(fn) {
    if (typeof fn !== "function") throw new TypeError("queueMicrotask needs a function");
    PromiseResolve().then(() => fn());
  });

  // ---- base64 -------------------------------------------------------------
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (typeof G.btoa !== "function") {
    define("btoa", function btoa(s) {
      s = StringCtor(s);
      let out = "";
      for (let i = 0; i < s.length; i += 3) {
        const a = s.charCodeAt(i), b = s.charCodeAt(i + 1), c = s.charCodeAt(i + 2);
        if (a > 255 || b > 255 || c > 255) throw new SandboxError("btoa: the string contains characters outside Latin-1");
        const n = (a << 16) | ((b || 0) << 8) | (c || 0);
        out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63] +
          (i + 1 < s.length ? B64[(n >> 6) & 63] : "=") + (i + 2 < s.length ? B64[n & 63] : "=");
      }
      return out;
    });
  }
  if (typeof G.atob !== "function") {
    define("atob", function atob(s) {
      s = StringCtor(s).replace(/[\t\n\f\r ]+/g, "");
      if (s.length % 4 === 0) s = s.replace(/==?$/, "");
      if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) throw new SandboxError("atob: invalid base64 input");
      let out = "", bits = 0, acc = 0;
      for (let i = 0; i < s.length; i++) {
        acc = (acc << 6) | B64.indexOf(s[i]); bits += 6;
        if (bits >= 8) { bits -= 8; out += StringCtor.fromCharCode((acc >> bits) & 255); }
      }
      return out;
    });
  }

  // ---- inner calls ----------------------------------------------------------
  const pending = new MapCtor();
  function callTool(name, input) {
    let json;
    try {
      json = JSONStringify(input === undefined ? {} : input);
    } catch (e) {
      return PromiseCtor.reject(new TypeError("the input of " + name + " is not JSON-serializable: " + describeError(e).message));
    }
    if (typeof json !== "string") json = "{}";
    let id;
    try { id = nativeStart(name, json); } catch (e) { return PromiseCtor.reject(e); }
    return new PromiseCtor((resolve, reject) => { pending.set(id, { resolve, reject, name }); });
  }
  function makeToolError(name, kind, message) {
    const e = new ErrorCtor(message);
    e.name = "ToolError";
    e.tool = name;
    e.kind = kind;
    return e;
  }
  const wired = new SetCtor();
  for (const t of tools) {
    const wire = t.name;
    wired.add(wire);
    if (t.global.startsWith("__wrepl_")) continue;
    const fn = { [t.global]: function (input) { return callTool(wire, input); } }[t.global];
    define(t.global, fn);
  }

  // ---- shorthands: the same dispatcher as the full-name wrappers ----------
  function opts(o) { return o !== null && typeof o === "object" ? o : {}; }
  function shQuote(s) { return "'" + StringCtor(s).replace(/'/g, "'\\''") + "'"; }
  define("shQuote", shQuote);
  if (wired.has("Bash")) {
    define("sh", async function sh(command, options) {
      const r = await callTool("Bash", Object.assign({}, opts(options), { command: StringCtor(command) }));
      if (r.exitCode !== 0) {
        const why = r.exitCode === null ? "was killed by signal " + r.signal : "exited with code " + r.exitCode;
        const detail = (r.stderr || r.stdout || "").trim().slice(-2000);
        const e = new ErrorCtor("the command " + why + (detail ? ": " + detail : ""));
        e.name = "ShellError";
        e.exitCode = r.exitCode; e.signal = r.signal; e.stdout = r.stdout; e.stderr = r.stderr;
        throw e;
      }
      return r.stdout;
    });
  }
  if (wired.has("Read")) {
    define("cat", async function cat(path, options) {
      const r = await callTool("Read", Object.assign({}, opts(options), { file_path: StringCtor(path) }));
      return typeof r.content === "string" ? r.content : r;
    });
  }
  if (wired.has("Grep")) {
    define("rg", async function rg(pattern, options) {
      const r = await callTool("Grep", Object.assign({ output_mode: "content", "-n": true }, opts(options), { pattern: StringCtor(pattern) }));
      return typeof r.content === "string" ? r.content : r;
    });
    define("rgf", async function rgf(pattern, options) {
      const r = await callTool("Grep", Object.assign({}, opts(options), { output_mode: "files_with_matches", pattern: StringCtor(pattern) }));
      return ArrayIsArray(r.filenames) ? r.filenames : r;
    });
  }
  if (wired.has("Glob")) {
    define("gl", async function gl(pattern, options) {
      const r = await callTool("Glob", Object.assign({}, opts(options), { pattern: StringCtor(pattern) }));
      return ArrayIsArray(r.filenames) ? r.filenames : r;
    });
  }
  if (wired.has("Write")) {
    define("put", function put(path, text) {
      return callTool("Write", { file_path: StringCtor(path), content: typeof text === "string" ? text : str(text) });
    });
  }
  if (wired.has("Sample")) {
    // Model sampling; the aliases are the same function (the client picks the model).
    const haiku = async function haiku(prompt, schema) {
      const input = { prompt: typeof prompt === "string" ? prompt : str(prompt), model: "haiku" };
      if (schema !== undefined && schema !== null) {
        if (typeof schema !== "object" || ArrayIsArray(schema)) throw new TypeError("haiku(prompt, schema): schema must be a JSON Schema object");
        input.schema = schema;
      }
      return callTool("Sample", input);
    };
    define("haiku", haiku);
    define("sonnet", haiku);
    define("opus", haiku);
    define("fable", haiku);
  }
  if (wired.has("chdir")) {
    define("chdir", function chdir(dir) { return callTool("chdir", { path: StringCtor(dir) }); });
  }

  // ---- dynamic tools --------------------------------------------------------
  const nativeRegister = native.registerTool;
  const nativeUnregister = native.unregisterTool;
  const registered = new MapCtor();
  const NAME_RE = /^[a-zA-Z0-9_-]{1,111}$/;
  const builtinNames = new SetCtor(Object.getOwnPropertyNames(G));
  function toolInfo(name, t) {
    return { name, wireName: "eval_registered__" + name, description: t.description, inputSchema: JSONParse(t.schemaJson), displayName: t.displayName };
  }
  define("registerTool", function registerTool(name, description, schema, handler, options) {
    if (typeof name !== "string" || !NAME_RE.test(name)) throw new TypeError("registerTool: the name must match ^[a-zA-Z0-9_-]{1,111}$");
    if (builtinNames.has(name)) throw new TypeError("registerTool: " + name + " clashes with a built-in global");
    if (typeof description !== "string") throw new TypeError("registerTool: the description must be a string");
    if (typeof handler !== "function") throw new TypeError("registerTool: the handler must be a function");
    if (schema === null || typeof schema !== "object" || ArrayIsArray(schema)) throw new TypeError("registerTool: the schema must be a JSON Schema object");
    let schemaJson;
    try { schemaJson = JSONStringify(schema); } catch (e) { throw new TypeError("registerTool: the schema is not JSON-serializable: " + describeError(e).message); }
    if (typeof schemaJson !== "string") throw new TypeError("registerTool: the schema is not JSON-serializable");
    let displayName = "";
    if (options !== null && typeof options === "object" && typeof options.displayName === "string") displayName = options.displayName;
    nativeRegister(name, description, schemaJson, displayName);
    registered.set(name, { description, schemaJson, handler, displayName });
    return "eval_registered__" + name;
  });
  define("unregisterTool", function unregisterTool(name) {
    const had = registered.delete(StringCtor(name));
    nativeUnregister(StringCtor(name));
    return had;
  });
  define("listTools", function listTools() {
    const out = [];
    for (const [name, t] of registered) out.push(toolInfo(name, t));
    return out;
  });
  define("getTool", function getTool(name) {
    const t = registered.get(StringCtor(name));
    return t ? toolInfo(StringCtor(name), t) : undefined;
  });
  // Used by the host's synthetic invocation script; not for scripts.
  define("__wrepl_invoke_registered", async function (name, input) {
    const t = registered.get(name);
    if (!t) throw new SandboxError("no registered tool named " + name);
    let out;
    try {
      out = await t.handler(input);
    } catch (e) {
      if (e instanceof ErrorCtor) throw e;
      const err = new ErrorCtor("the tool " + name + " threw a non-Error value: " + safeText(e));
      err.name = "ToolHandlerError";
      throw err;
    }
    return out;
  });

  // ---- per-eval control ---------------------------------------------------
  function deepResolve(v, depth, seen) {
    if (isThenable(v)) return PromiseResolve(v).then((r) => deepResolve(r, depth, seen));
    if (typeof v !== "object" || v === null || depth > MAX_DEPTH || seen.has(v)) return v;
    const proto = ObjectGetProto(v);
    const plainArray = ArrayIsArray(v);
    if (!plainArray && proto !== Object.prototype && proto !== null) return v;
    seen.add(v);
    const keys = plainArray ? null : ObjectKeys(v);
    const n = plainArray ? v.length : keys.length;
    let copy = null;
    const waits = [];
    for (let i = 0; i < n && i < MAX_ITEMS; i++) {
      const k = plainArray ? i : keys[i];
      let item;
      try { item = v[k]; } catch (_) { continue; }
      const r = deepResolve(item, depth + 1, seen);
      if (r !== item || isThenable(r)) {
        if (copy === null) copy = plainArray ? v.slice() : Object.assign({}, v);
        if (isThenable(r)) waits.push(PromiseResolve(r).then((x) => { copy[k] = x; }));
        else copy[k] = r;
      }
    }
    if (copy === null) return v;
    return waits.length ? PromiseCtor.all(waits).then(() => copy) : copy;
  }

  if (typeof repoHint === "string" && repoHint) define("repoHint", repoHint);
  let perEvalO = null;
  const control = {
    // Refresh the managed globals; returns the names that could not be
    // refreshed (the context is then poisoned and must be replaced).
    beginEval() {
      const bad = [];
      for (const [name, value] of managed) {
        if (name === "o") continue;
        try { ObjectDefine(G, name, { value, writable: true, configurable: true, enumerable: false }); } catch (_) { bad.push(name); }
      }
      perEvalO = {};
      try { ObjectDefine(G, "o", { value: perEvalO, writable: true, configurable: true, enumerable: false }); } catch (_) { bad.push("o"); }
      return bad;
    },
    // `completion` is what the async global eval resolves with: { value }.
    finish(completion) {
      return PromiseResolve(completion).then((c) => {
        let v = c !== null && typeof c === "object" ? c.value : c;
        if (v === undefined) v = G.o;
        return deepResolve(v, 0, new SetCtor());
      }).then((v) => {
        let json = null;
        try {
          json = JSONStringify(toData(v, 0, new SetCtor(), { n: 0 }));
        } catch (_) { json = null; }
        return { json: typeof json === "string" ? json : null, text: str(v) };
      });
    },
    complete(id, ok, payload, kind) {
      const p = pending.get(id);
      if (!p) return;
      pending.delete(id);
      if (ok) {
        let v;
        try { v = JSONParse(payload); } catch (e) {
          p.reject(makeToolError(p.name, "invalid-output", "the host returned invalid JSON for " + p.name));
          return;
        }
        p.resolve(v);
      } else {
        p.reject(makeToolError(p.name, kind, payload));
      }
    },
    fireTimer(id) {
      const t = timers.get(id);
      if (!t) return;
      if (t.repeat) nativeSetTimer(id, t.ms); else timers.delete(id);
      try {
        t.fn(...t.args);
      } catch (e) {
        const d = describeError(e);
        nativeWrite(2, "Uncaught exception in timer callback: " + d.name + ": " + d.message + "\n");
      }
    },
    endEval() {
      for (const id of timers.keys()) nativeClearTimer(id);
      timers.clear();
      // Calls still pending are the host's to abort and report.
      pending.clear();
    },
    describeError,
  };
  return control;
})
