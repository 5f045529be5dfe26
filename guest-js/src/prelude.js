// wrepl managed globals. Evaluated once per runtime; the completion value is a
// function the Rust side calls with the native bridge. That returns
// `configure(tools, repoHint)`, which installs one sandbox's tool globals and
// returns the control object that drives each evaluation. Nothing here is
// trusted by the host: every import re-validates what it receives.
(function (native) {
  "use strict";
  const G = globalThis;
  const ObjectKeys = Object.keys;
  const ObjectDefine = Object.defineProperty;
  const ObjectGetProto = Object.getPrototypeOf;
  const ArrayIsArray = Array.isArray;
  const JSONStringify = JSON.stringify;
  const JSONParse = JSON.parse;
  const PromiseCtor = Promise;
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
  const nativeIsPromise = native.isPromise;
  const nativeStaleManaged = native.staleManaged;
  // Intrinsics captured before any script runs: rendering, the result
  // pipeline and the timer/call plumbing never consult the realm's
  // (script-replaceable) built-ins, prototypes or species.
  const ReflectApply = Reflect.apply;
  const ReflectDefine = Reflect.defineProperty;
  const ReflectDelete = Reflect.deleteProperty;
  const ObjectSetProto = Object.setPrototypeOf;
  const ObjectGetOwnDesc = Object.getOwnPropertyDescriptor;
  const ObjectGetOwnNames = Object.getOwnPropertyNames;
  const ObjectAssign = Object.assign;
  const ObjectProto = Object.prototype;
  const NumberCtor = Number;
  const NumberIsFinite = Number.isFinite;
  const PromiseThen = Promise.prototype.then;
  const PromiseReject = Promise.reject;
  const ErrorProto = Error.prototype;
  const ErrorIsError = typeof Error.isError === "function" ? Error.isError : null;
  const DateGetTime = Date.prototype.getTime;
  const DateToISO = Date.prototype.toISOString;
  const MapGet = Map.prototype.get, MapSet = Map.prototype.set, MapHas = Map.prototype.has;
  const MapDelete = Map.prototype.delete, MapClear = Map.prototype.clear;
  const MapEntries = Map.prototype.entries, MapKeys = Map.prototype.keys;
  const MapSize = ObjectGetOwnDesc(Map.prototype, "size").get;
  const MapIterNext = ObjectGetProto(new Map().entries()).next;
  const SetHas = Set.prototype.has, SetAdd = Set.prototype.add, SetDelete = Set.prototype.delete;
  const SetValues = Set.prototype.values;
  const SetSize = ObjectGetOwnDesc(Set.prototype, "size").get;
  const SetIterNext = ObjectGetProto(new Set().values()).next;
  const ArrayBufferIsView = ArrayBuffer.isView;
  const TypedArrayLength = ObjectGetOwnDesc(ObjectGetProto(Uint8Array.prototype), "length").get;
  const StringSlice = String.prototype.slice;
  const StringToWellFormed = typeof String.prototype.toWellFormed === "function" ? String.prototype.toWellFormed : null;
  const RegExpExec = RegExp.prototype.exec;
  function call(f, self, ...args) { return ReflectApply(f, self, args); }
  // Strings cross into the host as UTF-8: lone surrogates become U+FFFD.
  function wellFormed(s) { return StringToWellFormed === null ? s : ReflectApply(StringToWellFormed, s, []); }
  function inherits(v, proto) {
    for (let p = ObjectGetProto(v), i = 0; p !== null && i < 1000; p = ObjectGetProto(p), i++) if (p === proto) return true;
    return false;
  }
  function isError(v) {
    if ((typeof v !== "object" && typeof v !== "function") || v === null) return false;
    return (ErrorIsError !== null && ErrorIsError(v)) || inherits(v, ErrorProto);
  }
  function brand(getter, v) { try { call(getter, v); return true; } catch (_) { return false; } }
  // Data descriptors with no prototype: a script's Object.prototype.get/set cannot reach them.
  function dataDesc(value) { return { __proto__: null, value, writable: true, configurable: true, enumerable: false }; }
  const NO_CTOR = dataDesc(undefined);

  // Managed globals, refreshed at the start of every evaluation.
  const managedNames = [], managedValues = [];
  function define(name, value) {
    ObjectDefine(G, name, dataDesc(value));
    managedNames[managedNames.length] = name;
    managedValues[managedValues.length] = value;
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

  // Output containers have no prototype: a script's Object.prototype.toJSON,
  // setters or Array.prototype.push cannot reach them.
  function newArray() { return ObjectSetProto([], null); }

  // Convert any value to JSON-compatible data (no getters run twice, cycles
  // and depth bounded, exotic values described). Proxies and hostile getters
  // run guest code only; the host parses the JSON text it receives.
  function toData(v, depth, seen, budget) {
    if (budget.n++ > MAX_ITEMS) return "[…]";
    switch (typeof v) {
      case "string": return wellFormed(v);
      case "number": return NumberIsFinite(v) ? v : StringCtor(v);
      case "boolean": return v;
      case "undefined": return null;
      case "bigint": return StringCtor(v) + "n";
      case "symbol": return StringCtor(v);
      case "function": return "[Function: " + fnName(v) + "]";
    }
    if (v === null) return null;
    if (call(SetHas, seen, v)) return "[Circular]";
    if (depth >= MAX_DEPTH) return ArrayIsArray(v) ? "[Array]" : "[Object]";
    call(SetAdd, seen, v);
    try {
      if (isError(v)) {
        const e = describeError(v);
        return { __proto__: null, name: e.name, message: e.message, stack: e.stack };
      }
      if (nativeIsPromise(v)) return "[Promise]";
      if (brand(DateGetTime, v)) { const t = call(DateGetTime, v); return t === t ? call(DateToISO, v) : "Invalid Date"; }
      if (brand(MapSize, v)) {
        const out = { __proto__: null };
        const it = call(MapEntries, v);
        for (;;) {
          const r = call(MapIterNext, it);
          if (r.done || budget.n++ > MAX_ITEMS) break;
          const k = r.value[0];
          out[wellFormed(typeof k === "string" ? k : safeText(k))] = toData(r.value[1], depth + 1, seen, budget);
        }
        return out;
      }
      if (brand(SetSize, v)) {
        const out = newArray();
        let n = 0;
        const it = call(SetValues, v);
        for (;;) {
          const r = call(SetIterNext, it);
          if (r.done || budget.n > MAX_ITEMS) break;
          out[n++] = toData(r.value, depth + 1, seen, budget);
        }
        return out;
      }
      if (ArrayBufferIsView(v)) {
        const out = newArray();
        let n = 0;
        try { n = call(TypedArrayLength, v); } catch (_) { n = 0; }  // a DataView
        if (n > MAX_ITEMS) n = MAX_ITEMS;
        for (let i = 0; i < n; i++) out[i] = toData(v[i], depth + 1, seen, budget);
        return out;
      }
      if (ArrayIsArray(v)) {
        const out = newArray();
        const n = v.length;
        for (let i = 0; i < n; i++) {
          if (budget.n > MAX_ITEMS) { out[i] = "[…]"; break; }
          out[i] = toData(v[i], depth + 1, seen, budget);
        }
        return out;
      }
      const out = { __proto__: null };
      const keys = ObjectKeys(v);
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i];
        if (budget.n > MAX_ITEMS) { out["…"] = "[truncated]"; break; }
        let val;
        try { val = v[k]; } catch (e) { val = "[getter threw: " + safeText(e) + "]"; }
        if (val === undefined) continue;
        out[wellFormed(k)] = toData(val, depth + 1, seen, budget);
      }
      return out;
    } finally {
      call(SetDelete, seen, v);
    }
  }

  function render(v) { return toData(v, 0, new SetCtor(), { __proto__: null, n: 0 }); }

  function safeText(v) {
    try {
      if (typeof v === "string") return v;
      if (v === undefined) return "undefined";
      if (typeof v === "symbol") return StringCtor(v);
      if (typeof v === "function") return "[Function: " + fnName(v) + "]";
      if (isError(v)) { const e = describeError(v); return e.name + ": " + e.message; }
      const data = render(v);
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
    return t.length > MAX_TEXT ? call(StringSlice, t, 0, MAX_TEXT) + "…[truncated]" : t;
  }
  define("str", str);

  function describeError(e) {
    let name = "Error", message = "", stack = "";
    try {
      if (isError(e) || (typeof e === "object" && e !== null && "message" in e)) {
        try { const n = e.name; if (typeof n === "string") name = n; } catch (_) { }
        try { const m = e.message; message = typeof m === "string" ? m : safeText(m); } catch (_) { }
        try { const s = e.stack; if (typeof s === "string") stack = s; } catch (_) { }
      } else {
        message = "Uncaught " + safeText(e);
      }
    } catch (_) {
      message = "[undescribable exception]";
    }
    return { __proto__: null, name: wellFormed(name), message: wellFormed(message), stack: wellFormed(stack) };
  }

  // ---- console ------------------------------------------------------------
  function fmt(args, prefix) {
    let s = prefix;
    for (let i = 0; i < args.length; i++) {
      if (i || prefix) s += " ";
      const a = args[i];
      s += typeof a === "string" ? a : safeText(a);
    }
    return s + "\n";
  }
  function write(stream, text) { nativeWrite(stream, wellFormed(text)); }
  const counts = new MapCtor();
  const consoleObj = {
    log(...a) { write(1, fmt(a, "")); },
    info(...a) { write(1, fmt(a, "")); },
    debug(...a) { write(1, fmt(a, "")); },
    trace(...a) { write(2, fmt(a, "")); },
    warn(...a) { write(2, fmt(a, "")); },
    error(...a) { write(2, fmt(a, "")); },
    dir(v) { write(1, fmt([v], "")); },
    table(v) { write(1, fmt([v], "")); },
    assert(c, ...a) { if (!c) write(2, fmt(a, "Assertion failed:")); },
    count(label = "default") {
      const key = safeText(label);
      const n = (call(MapGet, counts, key) || 0) + 1;
      call(MapSet, counts, key, n);
      write(1, key + ": " + n + "\n");
    },
  };
  define("console", consoleObj);

  // ---- timers -------------------------------------------------------------
  const timers = new MapCtor();
  let nextTimer = 1;
  function armTimer(fn, ms, args, repeat) {
    if (typeof fn !== "function") throw new TypeError("the timer callback must be a function");
    const id = nextTimer++;
    if (nextTimer > 0x7fffffff) nextTimer = 1;
    ms = NumberCtor(ms);
    if (!(ms >= 0)) ms = 0;
    if (!nativeSetTimer(id, ms)) throw new RangeError("too many timers are armed (limit 10000)");
    call(MapSet, timers, id, { __proto__: null, fn, args, ms, repeat });
    return id;
  }
  function clearTimer(id) {
    id = NumberCtor(id);
    if (call(MapDelete, timers, id)) nativeClearTimer(id);
  }
  define("setTimeout", function setTimeout(fn, ms, ...args) { return armTimer(fn, ms, args, false); });
  define("setInterval", function setInterval(fn, ms, ...args) { return armTimer(fn, ms, args, true); });
  define("clearTimeout", clearTimer);
  define("clearInterval", clearTimer);
  define("queueMicrotask", function queueMicrotask(fn) {
    if (typeof fn !== "function") throw new TypeError("queueMicrotask needs a function");
    settle(new PromiseCtor((resolve) => resolve()), () => { fn(); }, undefined);
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

  // ---- dynamic tools --------------------------------------------------------
  const nativeRegister = native.registerTool;
  const nativeUnregister = native.unregisterTool;
  const registered = new MapCtor();
  const NAME_RE = /^[a-zA-Z0-9_-]{1,111}$/;
  // Every global that exists once the sandbox is configured (so the
  // registration API's own names are in it), and the per-eval `o`: the
  // globals of the boot (captured below, once, in the pre-initialised
  // snapshot) plus those `configure` defines.
  let bootNames = null, configNames = null;
  function isBuiltin(name) { return name === "o" || call(SetHas, bootNames, name) || call(SetHas, configNames, name); }
  function toolInfo(name, t) {
    return { name, wireName: "eval_registered__" + name, description: t.description, inputSchema: JSONParse(t.schemaJson), displayName: t.displayName };
  }
  define("registerTool", function registerTool(name, description, schema, handler, options) {
    if (typeof name !== "string" || call(RegExpExec, NAME_RE, name) === null) throw new TypeError("registerTool: the name must match ^[a-zA-Z0-9_-]{1,111}$");
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
    return "eval_registered__" + name;
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

  // ---- promise plumbing ------------------------------------------------------
  // Attach reactions to `p` without consulting anything a script can replace
  // (Promise.prototype.then, `constructor`, Symbol.species): for a native
  // promise, the captured `then` runs with `constructor` shadowed for the
  // call; anything else (a thenable, a promise with its own `constructor`)
  // is first adopted by a fresh promise, which runs the script's own `then`.
  function settle(p, onFulfilled, onRejected) {
    if (nativeIsPromise(p) && ObjectGetOwnDesc(p, "constructor") === undefined && ReflectDefine(p, "constructor", NO_CTOR)) {
      try { return ReflectApply(PromiseThen, p, [onFulfilled, onRejected]); } finally { ReflectDelete(p, "constructor"); }
    }
    return settle(new PromiseCtor((resolve) => resolve(p)), onFulfilled, onRejected);
  }

  // Replace thenables inside plain objects and arrays by their values (the
  // value itself is left alone: changed containers are copied). Calls
  // `done(value)` once everything settled, or `fail(reason)`.
  function deepResolve(v, depth, seen, done, fail) {
    if (nativeIsPromise(v) || isThenable(v)) {
      settle(v, (r) => { try { deepResolve(r, depth, seen, done, fail); } catch (e) { fail(e); } }, fail);
      return;
    }
    if (typeof v !== "object" || v === null || depth > MAX_DEPTH || call(SetHas, seen, v)) { done(v); return; }
    const proto = ObjectGetProto(v);
    const plainArray = ArrayIsArray(v);
    if (!plainArray && proto !== ObjectProto && proto !== null) { done(v); return; }
    call(SetAdd, seen, v);
    const keys = plainArray ? null : ObjectKeys(v);
    const n = plainArray ? v.length : keys.length;
    const vals = newArray();
    let changed = false, waiting = 1, failed = false;
    function one() {
      if (--waiting !== 0 || failed) return;
      if (!changed) { done(v); return; }
      // The copy has no prototype; it is only rendered.
      const copy = plainArray ? newArray() : { __proto__: null };
      for (let i = 0; i < n; i++) {
        const k = plainArray ? i : keys[i];
        if (i < MAX_ITEMS) { copy[k] = vals[i]; continue; }
        try { copy[k] = v[k]; } catch (_) { break; }
      }
      done(copy);
    }
    function bad(e) { if (!failed) { failed = true; fail(e); } }
    for (let i = 0; i < n && i < MAX_ITEMS; i++) {
      const k = plainArray ? i : keys[i];
      let item;
      try { item = v[k]; } catch (e) { item = "[getter threw: " + safeText(e) + "]"; changed = true; }
      vals[i] = item;
      waiting++;
      deepResolve(item, depth + 1, seen, (r) => {
        if (r !== item) { vals[i] = r; changed = true; }
        one();
      }, bad);
    }
    one();
  }

  // The result of an evaluation: JSON text of the rendered value (null when
  // it has none) and its display text, as a prototype-less object.
  function renderValue(r) {
    let json = null;
    try { json = JSONStringify(render(r)); } catch (_) { json = null; }
    return { __proto__: null, json: typeof json === "string" ? wellFormed(json) : null, text: wellFormed(str(r)) };
  }

  // ---- per-eval control ---------------------------------------------------
  let perEvalO = null;
  const control = {
    __proto__: null,
    // Refresh the managed globals; returns the names that could not be
    // refreshed (the context is then poisoned and must be replaced).
    beginEval() {
      const bad = [];
      // Only globals a script replaced, deleted or reconfigured are redefined.
      const stale = nativeStaleManaged(managedNames, managedValues);
      for (let j = 0; j < stale.length; j++) {
        const i = stale[j], name = managedNames[i];
        if (!ReflectDefine(G, name, dataDesc(managedValues[i]))) bad[bad.length] = name;
      }
      perEvalO = {};
      if (!ReflectDefine(G, "o", dataDesc(perEvalO))) bad[bad.length] = "o";
      // QuickJS settles every evaluation with a plain { value } object, so a
      // `then` on Object.prototype would hijack every later result.
      if (ObjectGetOwnDesc(ObjectProto, "then") !== undefined) bad[bad.length] = "Object.prototype.then";
      return bad;
    },
    // `completion` is the promise of the async global eval; it fulfils with
    // { value }. Returns a promise of { json, text } (no prototype, so a
    // script's Object.prototype.then cannot intercept it).
    finish(completion) {
      return new PromiseCtor((resolve, reject) => {
        settle(completion, (c) => {
          try {
            let v = c !== null && typeof c === "object" ? c.value : c;
            if (v === undefined) v = G.o;
            // Like an async function's return value: a `then` getter that
            // throws rejects, a `then` method is followed.
            if (!nativeIsPromise(v) && ((typeof v === "object" && v !== null) || typeof v === "function")) {
              const then = v.then;
              if (typeof then === "function") v = new PromiseCtor((resolve) => resolve(v));
            }
            deepResolve(v, 0, new SetCtor(), (r) => resolve(renderValue(r)), reject);
          } catch (e) {
            reject(e);
          }
        }, reject);
      });
    },
    renderValue,
    complete(id, ok, payload, kind) {
      const p = call(MapGet, pending, id);
      if (!p) return;
      call(MapDelete, pending, id);
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
      const t = call(MapGet, timers, id);
      if (!t) return;
      if (t.repeat) nativeSetTimer(id, t.ms); else call(MapDelete, timers, id);
      try {
        ReflectApply(t.fn, undefined, t.args);
      } catch (e) {
        const d = describeError(e);
        write(2, "Uncaught exception in timer callback: " + d.name + ": " + d.message + "\n");
      }
    },
    endEval() {
      const it = call(MapKeys, timers);
      for (;;) {
        const r = call(MapIterNext, it);
        if (r.done) break;
        nativeClearTimer(r.value);
      }
      call(MapClear, timers);
      // Calls still pending are the host's to abort and report.
      call(MapClear, pending);
    },
    describeError,
  };

  // ---- shorthands: the same dispatcher as the full-name wrappers ----------
  // (`configure` installs those whose tool the sandbox has.)
  function opts(o) { return o !== null && typeof o === "object" ? o : {}; }
  function shQuote(s) { return "'" + StringCtor(s).replace(/'/g, "'\\''") + "'"; }
  define("shQuote", shQuote);

  // ---- per-sandbox configuration ------------------------------------------
  // Everything above is the same for every sandbox (and may be captured in a
  // pre-initialised snapshot of the guest); `configure`, called once by the
  // guest's `init` (which then forgets it), installs the tool globals and
  // shorthands of this sandbox and returns the control object.
  bootNames = new SetCtor(ObjectGetOwnNames(G));
  return function configure(tools, repoHint) {
    const firstConfigured = managedNames.length;
    const wired = new SetCtor();
    for (const t of tools) {
      const wire = t.name;
      wired.add(wire);
      if (t.global.startsWith("__wrepl_")) continue;
      const fn = { [t.global]: function (input) { return callTool(wire, input); } }[t.global];
      define(t.global, fn);
    }

    if (wired.has("Bash")) {
      define("sh", async function sh(command, options) {
        const r = await callTool("Bash", ObjectAssign({}, opts(options), { command: StringCtor(command) }));
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
        const r = await callTool("Read", ObjectAssign({}, opts(options), { file_path: StringCtor(path) }));
        return typeof r.content === "string" ? r.content : r;
      });
    }
    if (wired.has("Grep")) {
      define("rg", async function rg(pattern, options) {
        const r = await callTool("Grep", ObjectAssign({ output_mode: "content", "-n": true }, opts(options), { pattern: StringCtor(pattern) }));
        return typeof r.content === "string" ? r.content : r;
      });
      define("rgf", async function rgf(pattern, options) {
        const r = await callTool("Grep", ObjectAssign({}, opts(options), { output_mode: "files_with_matches", pattern: StringCtor(pattern) }));
        return ArrayIsArray(r.filenames) ? r.filenames : r;
      });
    }
    if (wired.has("Glob")) {
      define("gl", async function gl(pattern, options) {
        const r = await callTool("Glob", ObjectAssign({}, opts(options), { pattern: StringCtor(pattern) }));
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
    if (typeof repoHint === "string" && repoHint) define("repoHint", repoHint);
    configNames = new SetCtor();
    for (let i = firstConfigured; i < managedNames.length; i++) call(SetAdd, configNames, managedNames[i]);
    return control;
  };
})
