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
      const b = nativeBrandOf(v);
      if (b === BRAND_DATE) { const t = call(DateGetTime, v); return t === t ? call(DateToISO, v) : "Invalid Date"; }
      if (b === BRAND_MAP) {
        const out = { __proto__: null };
        const it = call(MapEntries, v);
        for (;;) {
          const r = call(MapIterNext, it);
          if (r.done) break;
          // Past the bound, a marker entry says the rest was left out.
          if (budget.n++ > MAX_ITEMS) { out["[…]"] = "more entries not shown"; break; }
          const k = r.value[0];
          out[wellFormed(typeof k === "string" ? k : safeText(k))] = toData(r.value[1], depth + 1, seen, budget);
        }
        return out;
      }
      if (b === BRAND_SET) {
        const out = newArray();
        let n = 0;
        const it = call(SetValues, v);
        for (;;) {
          const r = call(SetIterNext, it);
          if (r.done) break;
          if (budget.n > MAX_ITEMS) { out[n] = "[…]"; break; }
          out[n++] = toData(r.value, depth + 1, seen, budget);
        }
        return out;
      }
      if (ArrayBufferIsView(v)) {
        const out = newArray();
        let n = 0;
        try { n = call(TypedArrayLength, v); } catch (_) { n = 0; }  // a DataView
        const cut = n > MAX_ITEMS;
        if (cut) n = MAX_ITEMS;
        for (let i = 0; i < n; i++) out[i] = toData(v[i], depth + 1, seen, budget);
        if (cut) out[n] = "[…]";
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

  // The text of a value shown without rendering it (a string, `undefined`,
  // a symbol, a function, an error); null for every other value.
  function directText(v) {
    if (typeof v === "string") return v;
    if (v === undefined) return "undefined";
    if (typeof v === "symbol") return StringCtor(v);
    if (typeof v === "function") return "[Function: " + fnName(v) + "]";
    if (isError(v)) { const e = describeError(v); return e.name + ": " + e.message; }
    return null;
  }

  // The text of any other value from its rendering `data` and that
  // rendering's JSON text `json`.
  function renderedText(v, data, json) {
    if (typeof data === "string" && typeof v !== "object") return data;
    if (json === undefined) return "undefined";
    // Short values on one line, longer ones indented.
    return json.length > 80 ? JSONStringify(data, null, 2) : json;
  }

  function safeText(v) {
    try {
      const direct = directText(v);
      if (direct !== null) return direct;
      const data = render(v);
      return renderedText(v, data, JSONStringify(data));
    } catch (e) {
      return "[unrenderable value]";
    }
  }

  function capText(t) {
    return t.length > MAX_TEXT ? call(StringSlice, t, 0, MAX_TEXT) + "…[truncated]" : t;
  }

  function str(v) { return capText(safeText(v)); }
  define("str", str);

  // A stack without the prelude's own frames: they name no line of the
  // script (the prelude is compiled as `eval_script`).
  function scriptFrames(stack) {
    let out = "", start = 0;
    while (start < stack.length) {
      let end = call(StringIndexOf, stack, "\n", start);
      if (end < 0) end = stack.length - 1;
      const line = call(StringSlice, stack, start, end + 1);
      if (call(StringIndexOf, line, "(eval_script:") < 0) out += line;
      start = end + 1;
    }
    return out;
  }

  function describeError(e) {
    let name = "Error", message = "", stack = "";
    try {
      if (isError(e) || (typeof e === "object" && e !== null && "message" in e)) {
        try { const n = e.name; if (typeof n === "string") name = n; } catch (_) { }
        try { const m = e.message; message = typeof m === "string" ? m : safeText(m); } catch (_) { }
        try { const s = e.stack; if (typeof s === "string") stack = scriptFrames(s); } catch (_) { }
      } else {
        message = "Uncaught " + safeText(e);
      }
    } catch (_) {
      message = "[undescribable exception]";
    }
    return { __proto__: null, name: wellFormed(name), message: wellFormed(message), stack: wellFormed(stack) };
  }

