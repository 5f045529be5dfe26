// The "inspect" group: values shown as node's util.inspect shows them, for
// the terminal REPL (`eval-inspect`). Loaded on the first such evaluation,
// never in a context that only serves `eval`. It reads values through
// property descriptors only: no getter, no `toString`, no `inspect` hook of
// the script runs while a value is shown (a getter shows as `[Getter]`, a
// Proxy as `[Proxy]`). Every intrinsic it uses comes from `lib`, which the
// prelude captured while booting, so a script's changes to built-ins do not
// reach it. The walk is bounded: depth (2 by default, like node), 100 items
// per array, map or set, 10,000 characters per string, 2,000,000 of output.
(function (lib) {
  "use strict";
  const {
    call, newArray, ObjectGetProto, ObjectGetOwnDesc, ReflectOwnKeys, ArrayIsArray, StringCtor, NumberIsFinite,
    FunctionToString, nativeBrandOf, nativePromiseState, nativeIsPromise, isError, describeError, MapCtor, MapGet, MapSet, MapHas,
    MapEntries, MapIterNext, SetValues, SetIterNext, ArrayBufferIsView, TypedArrayLength, DateGetTime, DateToISO,
    RegExpSource, RegExpFlags, SymbolToString, StringSlice, StringPadStart, StringPadEnd, StringIncludes,
    StringCharCodeAt, StringRepeat, NumberToString, NumberCtor, ArrayJoin, MapDelete, ArrayProto, ArrayBufferByteLength, Uint8ArrayCtor, ObjectProto, FunctionProto, AsyncFunctionProto,
    GeneratorFunctionProto, AsyncGeneratorFunctionProto, TypedArrayToStringTag, MathMax, MathMin, MathSqrt,
    MathRound, MathFloor, ObjectIs, BRAND_DATE, BRAND_MAP, BRAND_SET, BRAND_REGEXP, BRAND_WEAKMAP, BRAND_WEAKSET,
    BRAND_PROXY, BRAND_WEAKREF, BRAND_ARRAYBUFFER, BRAND_DATAVIEW,
  } = lib;
  const MAX_ARRAY = 100, MAX_STRING = 10000, MAX_OUTPUT = 2000000, BREAK = 80;
  const toStringTag = lib.SymbolToStringTag;

  // node's default styles (util.inspect.styles) as ANSI codes.
  const STYLES = {
    __proto__: null,
    special: [36, 39], number: [33, 39], bigint: [33, 39], boolean: [33, 39], undefined: [90, 39],
    null: [1, 22], string: [32, 39], symbol: [32, 39], date: [35, 39], regexp: [31, 39],
  };

  function own(o, k) {
    try { return ObjectGetOwnDesc(o, k); } catch (_) { return undefined; }
  }
  function protoOf(o) {
    try { return ObjectGetProto(o); } catch (_) { return null; }
  }
  // A data property's value along the prototype chain (no getter runs).
  function dataProp(o, k) {
    for (let p = o, i = 0; p !== null && i < 1000; p = protoOf(p), i++) {
      if (nativeBrandOf(p) === BRAND_PROXY) return undefined;
      const d = own(p, k);
      if (d !== undefined) return "value" in d ? d.value : undefined;
    }
    return undefined;
  }
  function constructorName(o) {
    for (let p = o, i = 0; p !== null && i < 1000; p = protoOf(p), i++) {
      if (nativeBrandOf(p) === BRAND_PROXY) return null;
      const d = own(p, "constructor");
      if (d !== undefined && "value" in d && typeof d.value === "function") {
        const n = own(d.value, "name");
        if (n !== undefined && typeof n.value === "string" && n.value !== "") return n.value;
      }
    }
    return null;
  }

  function quote(s) {
    if (s.length > MAX_STRING) {
      return quote(call(StringSlice, s, 0, MAX_STRING)) + "... " + (s.length - MAX_STRING) + " more characters";
    }
    let q = "'";
    if (call(StringIncludes, s, "'")) {
      if (!call(StringIncludes, s, '"')) q = '"';
      else if (!call(StringIncludes, s, "`") && !call(StringIncludes, s, "${")) q = "`";
    }
    let out = q;
    for (let i = 0; i < s.length; i++) {
      const c = s[i], code = call(StringCharCodeAt, s, i);
      if (c === q || c === "\\") out += "\\" + c;
      else if (c === "\n") out += "\\n";
      else if (c === "\t") out += "\\t";
      else if (c === "\r") out += "\\r";
      else if (c === "\b") out += "\\b";
      else if (c === "\f") out += "\\f";
      else if (c === "\v") out += "\\v";
      else if (code < 0x20 || code === 0x7f) out += "\\x" + call(StringPadStart, call(NumberToString, code, 16), 2, "0");
      else out += c;
    }
    return out + q;
  }

  // (No regular expressions here: their matching runs RegExp.prototype
  // methods a script may replace.)
  function isIdentChar(code, first) {
    return (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || code === 95 || code === 36 ||
      (!first && code >= 48 && code <= 57);
  }
  function isIdentifier(k) {
    if (k.length === 0) return false;
    for (let i = 0; i < k.length; i++) if (!isIdentChar(call(StringCharCodeAt, k, i), i === 0)) return false;
    return true;
  }
  function isIndex(k) {
    if (k.length === 0 || k.length > 10 || (k.length > 1 && k[0] === "0")) return false;
    for (let i = 0; i < k.length; i++) {
      const c = call(StringCharCodeAt, k, i);
      if (c < 48 || c > 57) return false;
    }
    return true;
  }
  // The text without its ANSI colour sequences.
  function plain(s) {
    if (!call(StringIncludes, s, "\x1b")) return s;
    let out = "";
    for (let i = 0; i < s.length; i++) {
      if (s[i] === "\x1b" && s[i + 1] === "[") {
        let j = i + 2;
        while (j < s.length && s[j] !== "m") j++;
        i = j;
        continue;
      }
      out += s[i];
    }
    return out;
  }
  function keyText(k, ctx) {
    if (typeof k === "symbol") return "[" + ctx.paint(call(SymbolToString, k), "symbol") + "]";
    if (isIdentifier(k)) return k;
    return ctx.paint(quote(k), "string");
  }

  function primitive(v, ctx) {
    switch (typeof v) {
      case "string": return ctx.paint(quote(v), "string");
      case "number": return ctx.paint(ObjectIs(v, -0) ? "-0" : StringCtor(v), "number");
      case "bigint": return ctx.paint(StringCtor(v) + "n", "bigint");
      case "boolean": return ctx.paint(StringCtor(v), "boolean");
      case "undefined": return ctx.paint("undefined", "undefined");
      case "symbol": return ctx.paint(call(SymbolToString, v), "symbol");
    }
    return ctx.paint("null", "null");
  }

  function functionBase(f) {
    let src = "";
    try { src = call(FunctionToString, f); } catch (_) { }
    const nd = own(f, "name");
    const name = nd !== undefined && typeof nd.value === "string" ? nd.value : "";
    if (call(StringSlice, src, 0, 5) === "class" && (src.length === 5 || !isIdentChar(call(StringCharCodeAt, src, 5), false))) {
      return "[class " + (name || "(anonymous)") + "]";
    }
    const p = protoOf(f);
    let kind = "Function";
    if (p === AsyncFunctionProto) kind = "AsyncFunction";
    else if (p === GeneratorFunctionProto) kind = "GeneratorFunction";
    else if (p === AsyncGeneratorFunctionProto) kind = "AsyncGeneratorFunction";
    return "[" + kind + (name ? ": " + name : " (anonymous)") + "]";
  }

  function errorText(e, nested) {
    const d = describeError(e);
    const head = d.message === "" ? d.name : d.name + ": " + d.message;
    let end = d.stack.length;
    while (end > 0 && d.stack[end - 1] === "\n") end--;
    const stack = end === 0 ? "" : "\n" + call(StringSlice, d.stack, 0, end);
    if (nested && stack === "") return "[" + head + "]";
    return head + stack;
  }

  // The entries of a value's own properties (keys but array indices when
  // `skipIndices`), shown `key: value`.
  function propertyEntries(o, ctx, depth, skipIndices, out) {
    let keys;
    try { keys = ReflectOwnKeys(o); } catch (_) { return; }
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      if (skipIndices && typeof k === "string" && isIndex(k)) continue;
      const d = own(o, k);
      if (d === undefined || !d.enumerable) continue;
      let shown;
      if ("value" in d) shown = format(d.value, ctx, depth + 1, true);
      else if (d.get !== undefined) shown = ctx.paint(d.set !== undefined ? "[Getter/Setter]" : "[Getter]", "special");
      else shown = ctx.paint("[Setter]", "special");
      out[out.length] = keyText(k, ctx) + ": " + shown;
      if (ctx.budget()) return;
    }
  }

  // The prefix node puts before braces: `Foo `, `[Object: null prototype] `.
  function prefix(o, fallback, size) {
    const proto = protoOf(o);
    let name = constructorName(o);
    const tagD = toStringTag === undefined ? undefined : dataProp(o, toStringTag);
    const tag = typeof tagD === "string" && tagD !== "" ? tagD : null;
    if (proto === null) return "[" + fallback + (size === null ? "" : "(" + size + ")") + ": null prototype] ";
    if (name === null) name = fallback;
    let s = name + (size === null ? "" : "(" + size + ")");
    if (tag !== null && tag !== name) s += " [" + tag + "]";
    return s + " ";
  }

  function format(v, ctx, depth, nested) {
    if ((typeof v !== "object" && typeof v !== "function") || v === null) return primitive(v, ctx);
    const original = ctx.copies !== null && call(MapHas, ctx.copies, v) ? call(MapGet, ctx.copies, v) : v;
    const brand = nativeBrandOf(original);
    if (brand === BRAND_PROXY) return ctx.paint("[Proxy]", "special");
    if (call(MapHas, ctx.seen, v)) {
      let id = call(MapGet, ctx.seen, v);
      if (id === 0) { id = ++ctx.refs; call(MapSet, ctx.seen, v, id); }
      return ctx.paint("[Circular *" + id + "]", "special");
    }
    // On the path from the top while its entries are shown (0: not yet
    // referred to by a descendant; else its `<ref *N>` number).
    call(MapSet, ctx.seen, v, 0);
    let text, id = 0;
    try {
      text = formatObject(v, original, brand, ctx, depth, nested);
    } finally {
      id = call(MapGet, ctx.seen, v);
      call(MapDelete, ctx.seen, v);
    }
    if (id !== 0) text = ctx.paint("<ref *" + id + ">", "special") + " " + text;
    return text;
  }

  function formatObject(v, original, brand, ctx, depth, nested) {
    const entries = newArray();
    let open = "{", close = "}", base = "", pre = "", isArrayLike = false;
    if (typeof original === "function") {
      base = ctx.paint(functionBase(original), "special");
      propertyEntries(v, ctx, depth, false, entries);
      if (entries.length === 0) return base;
      return base + " " + reduce(entries, "{", "}", "", ctx, depth, false);
    }
    if (isError(original)) {
      base = errorText(original, nested);
      return base;
    }
    if (brand === BRAND_DATE) {
      const t = call(DateGetTime, original);
      return ctx.paint(t === t ? call(DateToISO, original) : "Invalid Date", "date");
    }
    if (brand === BRAND_REGEXP) {
      return ctx.paint("/" + call(RegExpSource, original) + "/" + call(RegExpFlags, original), "regexp");
    }
    if (brand === BRAND_WEAKMAP || brand === BRAND_WEAKSET || brand === BRAND_WEAKREF) {
      const name = brand === BRAND_WEAKMAP ? "WeakMap" : brand === BRAND_WEAKSET ? "WeakSet" : "WeakRef";
      return prefix(original, name, null) + "{ " + ctx.paint("<items unknown>", "special") + " }";
    }
    if (depth > ctx.depth) {
      const name = constructorName(original) || (ArrayIsArray(original) ? "Array" : "Object");
      return ctx.paint("[" + name + "]", "special");
    }
    {
      if (nativePromiseState !== undefined && nativeIsPromise(original)) {
        pre = prefix(original, "Promise", null);
        const st = nativePromiseState(original);
        if (st[0] === 0) entries[0] = ctx.paint("<pending>", "special");
        else if (st[0] === 1) entries[0] = format(st[1], ctx, depth + 1, true);
        else entries[0] = ctx.paint("<rejected>", "special") + " " + format(st[1], ctx, depth + 1, true);
        propertyEntries(v, ctx, depth, false, entries);
      } else if (brand === BRAND_MAP) {
        let size = 0;
        const it = call(MapEntries, original);
        for (;;) {
          const r = call(MapIterNext, it);
          if (r.done) break;
          if (size++ >= MAX_ARRAY) continue;
          entries[entries.length] = format(r.value[0], ctx, depth + 1, true) + " => " + format(r.value[1], ctx, depth + 1, true);
        }
        if (size > MAX_ARRAY) entries[entries.length] = "... " + (size - MAX_ARRAY) + " more item" + (size - MAX_ARRAY > 1 ? "s" : "");
        pre = prefix(original, "Map", size);
        propertyEntries(v, ctx, depth, false, entries);
      } else if (brand === BRAND_SET) {
        let size = 0;
        const it = call(SetValues, original);
        for (;;) {
          const r = call(SetIterNext, it);
          if (r.done) break;
          if (size++ >= MAX_ARRAY) continue;
          entries[entries.length] = format(r.value, ctx, depth + 1, true);
        }
        if (size > MAX_ARRAY) entries[entries.length] = "... " + (size - MAX_ARRAY) + " more item" + (size - MAX_ARRAY > 1 ? "s" : "");
        pre = prefix(original, "Set", size);
        propertyEntries(v, ctx, depth, false, entries);
      } else if (brand === BRAND_ARRAYBUFFER) {
        let n = 0;
        try { n = call(ArrayBufferByteLength, original); } catch (_) { n = 0; }
        const bytes = new Uint8ArrayCtor(original, 0, MathMin(n, 50));
        let hex = "";
        for (let i = 0; i < bytes.length; i++) hex += (i ? " " : "") + call(StringPadStart, call(NumberToString, bytes[i], 16), 2, "0");
        if (n > 50) hex += " ... " + (n - 50) + " more byte" + (n - 50 > 1 ? "s" : "");
        pre = prefix(original, "ArrayBuffer", null);
        entries[0] = "[Uint8Contents]: <" + hex + ">";
        entries[1] = "byteLength: " + ctx.paint(StringCtor(n), "number");
      } else if (ArrayBufferIsView(original) && brand !== BRAND_DATAVIEW) {
        let n = 0;
        try { n = call(TypedArrayLength, original); } catch (_) { n = 0; }
        const tag = call(TypedArrayToStringTag, original) || "TypedArray";
        pre = prefix(original, tag, n);
        open = "["; close = "]"; isArrayLike = true;
        for (let i = 0; i < n && i < MAX_ARRAY; i++) entries[i] = primitive(original[i], ctx);
        if (n > MAX_ARRAY) entries[entries.length] = "... " + (n - MAX_ARRAY) + " more item" + (n - MAX_ARRAY > 1 ? "s" : "");
        propertyEntries(v, ctx, depth, true, entries);
      } else if (ArrayIsArray(v)) {
        open = "["; close = "]"; isArrayLike = true;
        const ld = own(v, "length");
        const n = ld !== undefined && typeof ld.value === "number" ? ld.value : 0;
        const proto = protoOf(original);
        if (proto !== ArrayProto) pre = prefix(original, "Array", n);
        let holes = 0, shown = 0, i = 0;
        // A sparse array is walked by its own keys once a long run of holes
        // shows (`a.length = 1e9` must not take 1e9 steps).
        let indices = null, next = 0;
        for (; i < n && shown < MAX_ARRAY; i++) {
          if (holes > 1000 && indices === null) {
            indices = newArray();
            let keys;
            try { keys = ReflectOwnKeys(v); } catch (_) { keys = newArray(); }
            for (let k = 0; k < keys.length; k++) {
              if (typeof keys[k] === "string" && isIndex(keys[k])) indices[indices.length] = NumberCtor(keys[k]);
            }
            while (next < indices.length && indices[next] < i) next++;
          }
          if (indices !== null) {
            const at = next < indices.length ? MathMin(indices[next], n) : n;
            holes += at - i;
            i = at;
            next++;
            if (i >= n) break;
          }
          const d = own(v, StringCtor(i));
          if (d === undefined) { holes++; continue; }
          if (holes > 0) { entries[entries.length] = ctx.paint("<" + holes + " empty item" + (holes > 1 ? "s" : "") + ">", "undefined"); shown++; holes = 0; }
          if (shown >= MAX_ARRAY) break;
          entries[entries.length] = "value" in d ? format(d.value, ctx, depth + 1, true)
            : ctx.paint(d.set !== undefined ? "[Getter/Setter]" : "[Getter]", "special");
          shown++;
          if (ctx.budget()) break;
        }
        if (holes > 0) entries[entries.length] = ctx.paint("<" + holes + " empty item" + (holes > 1 ? "s" : "") + ">", "undefined");
        if (i < n) entries[entries.length] = "... " + (n - i) + " more item" + (n - i > 1 ? "s" : "");
        propertyEntries(v, ctx, depth, true, entries);
      } else {
        const proto = protoOf(original);
        if (proto !== ObjectProto) pre = prefix(original, "Object", null);
        else {
          const tag = toStringTag === undefined ? undefined : dataProp(original, toStringTag);
          if (typeof tag === "string" && tag !== "") pre = "Object [" + tag + "] ";
        }
        if (brand === BRAND_DATAVIEW) pre = prefix(original, "DataView", null);
        propertyEntries(v, ctx, depth, false, entries);
        if (entries.length === 0) return pre + "{}";
      }
    }
    const text = reduce(entries, open, close, pre, ctx, depth, isArrayLike);
    return text;
  }

  function visibleLength(s) { return plain(s).length; }

  // node's reduceToSingleString: on one line when it fits, else one entry
  // per line; long arrays of short items in columns (groupArrayElements).
  // Entries shown on lines of their own are already indented for their
  // depth.
  function reduce(entries, open, close, pre, ctx, depth, isArrayLike) {
    if (entries.length === 0) return pre + open + close;
    let out = entries;
    if (isArrayLike && entries.length > 6) out = group(entries, depth);
    if (out === entries) {
      let total = out.length * 2 + depth * 2 + visibleLength(pre) + open.length + 10;
      let multiline = false;
      for (let i = 0; i < out.length; i++) {
        total += visibleLength(out[i]);
        if (call(StringIncludes, out[i], "\n")) multiline = true;
      }
      if (!multiline && total <= BREAK) return pre + open + " " + call(ArrayJoin, out, ", ") + " " + close;
    }
    const indent = call(StringRepeat, " ", depth * 2 + 2);
    let body = "";
    for (let i = 0; i < out.length; i++) body += (i ? ",\n" : "\n") + indent + out[i];
    return pre + open + body + "\n" + call(StringRepeat, " ", depth * 2) + close;
  }

  function group(entries, depth) {
    let total = 0, max = 0;
    const lengths = newArray();
    // The "... N more items" line is not part of the columns.
    const more = call(StringSlice, entries[entries.length - 1], 0, 4) === "... ";
    const outputLength = entries.length - (more ? 1 : 0);
    for (let i = 0; i < outputLength; i++) {
      const len = visibleLength(entries[i]);
      lengths[i] = len;
      total += len + 2;
      if (max < len) max = len;
    }
    const actualMax = max + 2;
    if (actualMax * 3 + depth * 2 >= BREAK || !(total / actualMax > 5 || max <= 6)) return entries;
    const averageBias = MathSqrt(actualMax - total / entries.length);
    const biasedMax = MathMax(actualMax - 3 - averageBias, 1);
    const columns = MathMin(
      MathRound(MathSqrt(2.5 * biasedMax * outputLength) / biasedMax),
      MathFloor((BREAK - depth * 2) / actualMax),
      12,
      15,
    );
    if (columns <= 1) return entries;
    const maxLineLength = newArray();
    for (let i = 0; i < columns; i++) {
      let lineLength = 0;
      for (let j = i; j < outputLength; j += columns) if (lengths[j] > lineLength) lineLength = lengths[j];
      maxLineLength[i] = lineLength + 2;
    }
    // Numbers are aligned right, like node does for arrays of numbers.
    let numbers = true;
    for (let i = 0; i < outputLength && numbers; i++) {
      const c = plain(entries[i]);
      const k = call(StringCharCodeAt, c, c[0] === "-" ? 1 : 0);
      numbers = k >= 48 && k <= 57;
    }
    const out = newArray();
    for (let i = 0; i < outputLength; i += columns) {
      const maxI = MathMin(i + columns, outputLength);
      let line = "";
      let j = i;
      for (; j < maxI - 1; j++) {
        const padding = maxLineLength[j - i] + entries[j].length - lengths[j];
        const cell = entries[j] + ", ";
        line += numbers ? call(StringPadStart, cell, padding, " ") : call(StringPadEnd, cell, padding, " ");
      }
      if (numbers) {
        const padding = maxLineLength[j - i] + entries[j].length - lengths[j] - 2;
        line += call(StringPadStart, entries[j], padding, " ");
      } else {
        line += entries[j];
      }
      out[out.length] = line;
    }
    if (more) out[out.length] = entries[outputLength];
    return out;
  }

  // The property names of `o` and its prototypes (at most `max`), read
  // without running any of the script's code; none for a Proxy.
  function memberNames(o, max, out) {
    const seen = new MapCtor();
    for (let p = o, i = 0; p !== null && i < 100; p = protoOf(p), i++) {
      if (nativeBrandOf(p) === BRAND_PROXY) break;
      let keys;
      try { keys = ReflectOwnKeys(p); } catch (_) { break; }
      for (let j = 0; j < keys.length && out.length < max; j++) {
        const k = keys[j];
        if (typeof k !== "string" || call(MapHas, seen, k)) continue;
        call(MapSet, seen, k, true);
        out[out.length] = k;
      }
    }
    return out;
  }

  // What the terminal REPL completes: the names of the globals, and for
  // each global that holds an object or a function, its property names.
  // Bounded: 2,000 globals, 300 names each, 20,000 names in all.
  function completions() {
    const G = lib.G;
    const globals = memberNames(G, 2000, newArray());
    const members = { __proto__: null };
    let total = globals.length;
    for (let i = 0; i < globals.length && total < 20000; i++) {
      const d = own(G, globals[i]);
      if (d === undefined || !("value" in d)) continue;
      const v = d.value;
      if ((typeof v !== "object" && typeof v !== "function") || v === null) continue;
      // An array's (or a typed array's) own keys are its indices: only
      // its prototypes' names are offered, and its elements are not listed.
      const listed = ArrayIsArray(v) || ArrayBufferIsView(v) ? protoOf(v) : v;
      if (listed === null) continue;
      const names = memberNames(listed, 300, newArray());
      members[globals[i]] = names;
      total += names.length;
    }
    return { __proto__: null, globals, members };
  }

  // `inspect(value, colors, depth, copies)`: the text; `copies` maps the
  // containers deep-resolving replaced to the originals they copy.
  function inspect(value, colors, depth, copies) {
    let items = 0;
    const ctx = {
      __proto__: null,
      depth: typeof depth === "number" ? depth : 2,
      seen: new MapCtor(),
      refs: 0,
      copies: copies || null,
      paint: colors
        ? (s, style) => { const st = STYLES[style]; return st === undefined ? s : "\x1b[" + st[0] + "m" + s + "\x1b[" + st[1] + "m"; }
        : (s) => s,
      budget: () => ++items > 100000,
    };
    const text = format(value, ctx, 0, false);
    return text.length > MAX_OUTPUT ? call(StringSlice, text, 0, MAX_OUTPUT) + "…" : text;
  }

  return { __proto__: null, inspect, completions };
})
