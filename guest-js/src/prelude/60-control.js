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
      if (v === undefined) v = G.o;
      if (!nativeIsPromise(v) && ((typeof v === "object" && v !== null) || typeof v === "function")) {
        const then = v.then;
        if (typeof then === "function") v = new PromiseCtor((resolve) => resolve(v));
      }
      deepResolve(v, 0, new SetCtor(), (r) => resolve(renderValue(r)), reject);
    } catch (e) {
      reject(e);
    }
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
    describeError,
  };

