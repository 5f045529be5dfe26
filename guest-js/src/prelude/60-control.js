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
  // With `copies` (a Map), each copy made is noted there with the value it
  // copies (the terminal view shows the copy as the original's class).
  function deepResolve(v, depth, seen, done, fail, copies) {
    if (nativeIsPromise(v) || isThenable(v)) {
      settle(v, (r) => { try { deepResolve(r, depth, seen, done, fail, copies); } catch (e) { fail(e); } }, fail);
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
    // The terminal view reads no getter: an accessor is copied as one
    // (shown as `[Getter]`).
    let accessors = null;
    let changed = false, waiting = 1, failed = false;
    function one() {
      if (--waiting !== 0 || failed) return;
      if (!changed) { done(v); return; }
      // The copy has no prototype; it is only rendered.
      const copy = plainArray ? newArray() : { __proto__: null };
      for (let i = 0; i < n; i++) {
        const k = plainArray ? i : keys[i];
        if (i < MAX_ITEMS) {
          if (accessors !== null && accessors[i] === true) ReflectDefine(copy, k, vals[i]);
          else copy[k] = vals[i];
          continue;
        }
        try { copy[k] = v[k]; } catch (_) { break; }
      }
      if (copies !== undefined) call(MapSet, copies, copy, v);
      done(copy);
    }
    function bad(e) { if (!failed) { failed = true; fail(e); } }
    for (let i = 0; i < n && i < MAX_ITEMS; i++) {
      const k = plainArray ? i : keys[i];
      if (copies !== undefined) {
        const d = ObjectGetOwnDesc(v, k);
        if (d !== undefined && !("value" in d)) {
          if (accessors === null) accessors = newArray();
          accessors[i] = true;
          vals[i] = { __proto__: null, get: d.get, set: d.set, enumerable: d.enumerable, configurable: true };
          continue;
        }
      }
      let item;
      try { item = v[k]; } catch (e) { item = "[getter threw: " + safeText(e) + "]"; changed = true; }
      vals[i] = item;
      waiting++;
      deepResolve(item, depth + 1, seen, (r) => {
        if (r !== item) { vals[i] = r; changed = true; }
        one();
      }, bad, copies);
    }
    one();
  }

  // The result of an evaluation: JSON text of the rendered value (null when
  // it has none) and its display text, as a prototype-less object.
  // The value is rendered once: its getters run once, and the text is made
  // from the same rendering as the JSON (what `str` would give).
  function renderValue(r) {
    let data, json = null;
    try { data = render(r); json = JSONStringify(data); } catch (_) { json = null; }
    let text;
    try {
      const direct = directText(r);
      text = direct !== null ? direct : typeof json === "string" ? renderedText(r, data, json) : "[unrenderable value]";
    } catch (_) { text = "[unrenderable value]"; }
    return { __proto__: null, json: typeof json === "string" ? wellFormed(json) : null, text: wellFormed(capText(text)),
      total: text.length > MAX_TEXT ? text.length : 0 };
  }

  // Render the value an evaluation completed with: `undefined` stands for
  // the per-eval `o`, thenables are followed and promises inside plain
  // objects and arrays awaited (like an async function's return value: a
  // `then` getter that throws rejects, a `then` method is followed).
  function finishWith(v, resolve, reject) {
    try {
      if (v === undefined && view === null) v = G.o;
      if (!nativeIsPromise(v) && ((typeof v === "object" && v !== null) || typeof v === "function")) {
        const then = v.then;
        if (typeof then === "function") v = new PromiseCtor((resolve) => resolve(v));
      }
      if (view !== null) {
        // The terminal view: `undefined` is shown as such, the value is
        // kept as `_`, and shown as node's util.inspect shows it.
        const copies = new MapCtor();
        const show = (r) => {
          try {
            deepResolve(r, 0, new SetCtor(), (d) => resolve(inspectValue(r, d, copies)), reject, copies);
          } catch (e) { reject(e); }
        };
        if (nativeIsPromise(v)) settle(v, show, reject); else show(v);
        return;
      }
      deepResolve(v, 0, new SetCtor(), (r) => resolve(renderValue(r)), reject);
    } catch (e) {
      reject(e);
    }
  }

  // ---- the terminal view (`eval-inspect`) -------------------------------------
  // null: results are rendered for the model (`renderValue`); else how the
  // terminal REPL shows them: { colors }. Set by the Rust side (`setView`)
  // when it changes.
  let view = null;
  let inspectFn = null;
  function inspector() {
    if (inspectFn === null) {
      if (platformNatives === null) platformNatives = makePlatform();
      const lib = ObjectAssign({ __proto__: null }, inspectIntrinsics, {
        G, call, newArray, NumberCtor, ObjectGetProto, ObjectGetOwnDesc, ArrayIsArray, StringCtor, NumberIsFinite, FunctionToString,
        nativeBrandOf, nativePromiseState: platformNatives.promiseState, nativeIsPromise, isError, describeError,
        MapCtor, MapGet, MapSet, MapHas, MapDelete, MapEntries, MapIterNext, SetValues, SetIterNext,
        ArrayBufferIsView, TypedArrayLength, DateGetTime, DateToISO, StringSlice, ObjectProto,
        BRAND_DATE, BRAND_MAP, BRAND_SET, BRAND_REGEXP: 4, BRAND_WEAKMAP: 5, BRAND_WEAKSET: 6, BRAND_PROXY: 7,
        BRAND_WEAKREF: 8, BRAND_ARRAYBUFFER: 9, BRAND_DATAVIEW: 10,
      });
      inspectFn = platformGroup("inspect")(lib);
    }
    return inspectFn;
  }
  // `_` and `_error`, as node's REPL keeps them: the last result and the
  // last error, until a script assigns the name itself (then it is an
  // ordinary global from there on, and the REPL says so).
  const kept = { __proto__: null, _: undefined, _error: undefined };
  const keptGetters = { __proto__: null };
  function keep(name, value) {
    let getter = keptGetters[name];
    if (getter === undefined) {
      if (ObjectGetOwnDesc(G, name) !== undefined) return;  // the script's own
      getter = () => kept[name];
      keptGetters[name] = getter;
      ReflectDefine(G, name, {
        __proto__: null, configurable: true, enumerable: false, get: getter,
        set(v) {
          ReflectDefine(G, name, { __proto__: null, value: v, writable: true, configurable: true, enumerable: true });
          write(1, "Expression assignment to " + name + " now disabled.\n");
        },
      });
    }
    const d = ObjectGetOwnDesc(G, name);
    if (d !== undefined && d.get === getter) kept[name] = value;
  }
  // The outcome in the terminal view: the text, and as its JSON the names
  // the REPL completes (see `eval-inspect`).
  function inspectValue(value, shown, copies) {
    keep("_", value);
    let text, json = null;
    try {
      text = inspector().inspect(shown, view.colors, 2, copies);
    } catch (e) {
      text = "[uninspectable value: " + safeText(e) + "]";
    }
    try { json = wellFormed(JSONStringify(inspector().completions())); } catch (_) { json = null; }
    return { __proto__: null, json, text: wellFormed(capText(text)), total: text.length > MAX_TEXT ? text.length : 0 };
  }

  // ---- per-eval control ---------------------------------------------------
  const control = {
    __proto__: null,
    // What the Rust side refreshes before every evaluation (natively): the
    // managed globals (`managedNames[i]` must hold `managedValues[i]`; both
    // are complete once `configure` ran), and the realm's own
    // Object.prototype, which must not get a `then`: QuickJS settles every
    // evaluation with top-level await with a plain { value } object, so a
    // `then` there would hijack every later result.
    managedNames,
    managedValues,
    objectProto: ObjectProto,
    // `completion` is the promise of an eval with top-level await; it
    // fulfils with { value }. Returns a promise of { json, text } (no
    // prototype, so a script's Object.prototype.then cannot intercept it).
    finish(completion) {
      return new PromiseCtor((resolve, reject) => {
        settle(completion, (c) => {
          let v;
          try { v = c !== null && typeof c === "object" ? c.value : c; } catch (e) { reject(e); return; }
          finishWith(v, resolve, reject);
        }, reject);
      });
    },
    // The same for the completion value of an eval without top-level await.
    finishValue(v) {
      return new PromiseCtor((resolve, reject) => finishWith(v, resolve, reject));
    },
    renderValue,
    // The error a failed inner call rejects with (its promise and the call
    // table are native: see `natives.rs`).
    toolError: makeToolError,
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
    },
    describeError(e) {
      if (view !== null) keep("_error", e);
      return describeError(e);
    },
    // The terminal view from now on: `colors` true or false; null for the
    // model's rendering.
    setView(colors) {
      view = colors === null ? null : { __proto__: null, colors: colors === true };
    },
  };

