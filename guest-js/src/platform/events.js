// The "events" group: Event, CustomEvent, EventTarget, AbortController and
// AbortSignal, after the DOM standard (https://dom.spec.whatwg.org/) for event
// targets outside any node tree (an event's path is its target alone).
// Also returned, for other groups through load("events") and never installed
// as globals: __addAbortAlgorithm(signal, fn) (runs fn when the signal aborts;
// returns a function that removes it), __isAbortSignal(v) and
// __platformBrand(v) (the interface name of an object made here, else null).
(function (platform, load) {
  "use strict";
  const G = globalThis;
  // Captured when the group loads: later changes a script makes to built-ins
  // do not reach the dispatch machinery.
  const ReflectApply = Reflect.apply;
  const ObjectDefine = Object.defineProperty;
  const ObjectGetOwnDesc = Object.getOwnPropertyDescriptor;
  const ObjectGetOwnNames = Object.getOwnPropertyNames;
  const ObjectSetProto = Object.setPrototypeOf;
  const ObjectHasOwn = Object.prototype.hasOwnProperty;
  const TypeErrorCtor = TypeError;
  const WeakMapCtor = WeakMap;
  const WeakMapGet = WeakMap.prototype.get, WeakMapSet = WeakMap.prototype.set;
  const MapCtor = Map;
  const MapGet = Map.prototype.get, MapSet = Map.prototype.set, MapDelete = Map.prototype.delete;
  const SetCtor = Set;
  const SetAdd = Set.prototype.add, SetDelete = Set.prototype.delete, SetValues = Set.prototype.values;
  const SetIterNext = Object.getPrototypeOf(new Set().values()).next;
  const SymbolIterator = Symbol.iterator;
  const SymbolToStringTag = Symbol.toStringTag;
  const NumberIsFinite = Number.isFinite;
  const MathTrunc = Math.trunc;
  const DateNow = Date.now;
  const DOMExceptionCtor = G.DOMException;
  const setTimeoutFn = G.setTimeout;
  const perf = G.performance;
  const perfNow = perf !== null && typeof perf === "object" && typeof perf.now === "function" ? perf.now : null;
  const timeOrigin = DateNow();
  const consoleObj = G.console;
  const consoleError = consoleObj !== null && typeof consoleObj === "object" && typeof consoleObj.error === "function"
    ? consoleObj.error : null;
  // Timers longer than this (about 24.8 days) overflow in most hosts.
  const MAX_TIMER_MS = 0x7fffffff;

  function call(f, self, ...args) { return ReflectApply(f, self, args); }
  // Internal lists have no prototype: a script's Array.prototype setters,
  // iterators or methods cannot reach them.
  function newList() { return ObjectSetProto([], null); }
  function push(list, v) { list[list.length] = v; }
  function setToList(set) {
    const out = newList();
    const it = call(SetValues, set);
    for (;;) {
      const r = call(SetIterNext, it);
      if (r.done) return out;
      push(out, r.value);
    }
  }
  function isObject(v) { return (typeof v === "object" && v !== null) || typeof v === "function"; }
  function illegal() { return new TypeErrorCtor("Illegal invocation"); }
  // Web IDL DOMString: ToString, which throws for symbols.
  function toDOMString(v) { return typeof v === "string" ? v : `${v}`; }
  function requireArgs(need, have, what) {
    if (have < need) {
      throw new TypeErrorCtor(`Failed to ${what}: ${need} argument${need === 1 ? "" : "s"} required, but only ${have} present.`);
    }
  }
  // Web IDL dictionary: undefined and null are empty, other non-objects throw.
  function dictionary(v, what) {
    if (v === undefined || v === null) return null;
    if (!isObject(v)) throw new TypeErrorCtor(`Failed to ${what}: The provided value is not of type 'EventInit'.`);
    return v;
  }
  function now() { return perfNow !== null ? ReflectApply(perfNow, perf, []) : DateNow() - timeOrigin; }
  // "Report the exception": the sandbox has no error event, so it goes to stderr.
  function report(err) {
    if (consoleError === null) return;
    try { ReflectApply(consoleError, consoleObj, ["Uncaught", err]); } catch (_) { /* nothing more to do */ }
  }
  function abortError() { return new DOMExceptionCtor("This operation was aborted", "AbortError"); }

  // Web IDL interface shape: members of the prototype (and static operations)
  // are enumerable; the prototype carries the interface name as its tag.
  function webidl(Ctor, tag) {
    const objects = [Ctor.prototype, Ctor];
    for (let o = 0; o < 2; o++) {
      const obj = objects[o];
      const names = ObjectGetOwnNames(obj);
      for (let i = 0; i < names.length; i++) {
        const name = names[i];
        if (name === "constructor" || name === "prototype" || name === "length" || name === "name") continue;
        const d = ObjectGetOwnDesc(obj, name);
        if (call(ObjectHasOwn, d, "value")) {
          if (typeof d.value !== "function") continue;
          ObjectDefine(obj, name, { __proto__: null, value: d.value, writable: true, enumerable: true, configurable: true });
        } else {
          ObjectDefine(obj, name, { __proto__: null, get: d.get, set: d.set, enumerable: true, configurable: true });
        }
      }
    }
    ObjectDefine(Ctor.prototype, SymbolToStringTag, { __proto__: null, value: tag, writable: false, enumerable: false, configurable: true });
  }

  // ---- Event ----------------------------------------------------------------
  // Event phases (CAPTURING_PHASE and BUBBLING_PHASE never occur without a tree).
  const NONE = 0, AT_TARGET = 2;
  const eventStates = new WeakMapCtor();
  function eventState(e) {
    const s = call(WeakMapGet, eventStates, e);
    if (s === undefined) throw illegal();
    return s;
  }
  function isEvent(e) { return call(WeakMapGet, eventStates, e) !== undefined; }
  function setCanceled(s) { if (s.cancelable && !s.inPassive) s.canceled = true; }
  // isTrusted is [LegacyUnforgeable]: an own, non-configurable accessor on
  // every event, sharing one getter.
  const isTrustedGetter = {
    get isTrusted() { return eventState(this).trusted; },
  };
  const ISTRUSTED_DESC = {
    __proto__: null,
    get: ObjectGetOwnDesc(isTrustedGetter, "isTrusted").get,
    set: undefined,
    enumerable: true,
    configurable: false,
  };

  class Event {
    constructor(type, eventInitDict = undefined) {
      requireArgs(1, arguments.length, "construct 'Event'");
      type = toDOMString(type);
      const d = dictionary(eventInitDict, "construct 'Event'");
      // Dictionary members are read in lexicographic order.
      const bubbles = d !== null && !!d.bubbles;
      const cancelable = d !== null && !!d.cancelable;
      const composed = d !== null && !!d.composed;
      call(WeakMapSet, eventStates, this, {
        __proto__: null,
        type, bubbles, cancelable, composed,
        target: null, currentTarget: null, phase: NONE,
        stopProp: false, stopImmediate: false, canceled: false, inPassive: false,
        dispatching: false, initialized: true, trusted: false,
        timeStamp: now(),
        custom: false, detail: null,
      });
      ObjectDefine(this, "isTrusted", ISTRUSTED_DESC);
    }
    get type() { return eventState(this).type; }
    get target() { return eventState(this).target; }
    get srcElement() { return eventState(this).target; }
    get currentTarget() { return eventState(this).currentTarget; }
    composedPath() {
      const s = eventState(this);
      const out = [];
      if (s.dispatching && s.currentTarget !== null) out[0] = s.currentTarget;
      return out;
    }
    get eventPhase() { return eventState(this).phase; }
    stopPropagation() { eventState(this).stopProp = true; }
    get cancelBubble() { return eventState(this).stopProp; }
    set cancelBubble(value) { const s = eventState(this); if (value) s.stopProp = true; }
    stopImmediatePropagation() {
      const s = eventState(this);
      s.stopProp = true;
      s.stopImmediate = true;
    }
    get bubbles() { return eventState(this).bubbles; }
    get cancelable() { return eventState(this).cancelable; }
    get returnValue() { return !eventState(this).canceled; }
    set returnValue(value) { const s = eventState(this); if (!value) setCanceled(s); }
    preventDefault() { setCanceled(eventState(this)); }
    get defaultPrevented() { return eventState(this).canceled; }
    get composed() { return eventState(this).composed; }
    get timeStamp() { return eventState(this).timeStamp; }
    initEvent(type, bubbles = false, cancelable = false) {
      const s = eventState(this);
      requireArgs(1, arguments.length, "execute 'initEvent' on 'Event'");
      type = toDOMString(type);
      if (s.dispatching) return;
      s.initialized = true;
      s.stopProp = false;
      s.stopImmediate = false;
      s.canceled = false;
      s.trusted = false;
      s.target = null;
      s.type = type;
      s.bubbles = !!bubbles;
      s.cancelable = !!cancelable;
    }
  }
  webidl(Event, "Event");
  const PHASES = ["NONE", "CAPTURING_PHASE", "AT_TARGET", "BUBBLING_PHASE"];
  for (let i = 0; i < 4; i++) {
    const desc = { __proto__: null, value: i, writable: false, enumerable: true, configurable: false };
    ObjectDefine(Event, PHASES[i], desc);
    ObjectDefine(Event.prototype, PHASES[i], desc);
  }

  // initCustomEvent must not depend on the (script-writable) prototype.
  const initEventMethod = Event.prototype.initEvent;

  class CustomEvent extends Event {
    constructor(type, eventInitDict = undefined) {
      requireArgs(1, arguments.length, "construct 'CustomEvent'");
      super(type, eventInitDict);
      const s = eventState(this);
      s.custom = true;
      if (eventInitDict !== undefined && eventInitDict !== null) {
        const detail = eventInitDict.detail;
        if (detail !== undefined) s.detail = detail;
      }
    }
    get detail() {
      const s = eventState(this);
      if (!s.custom) throw illegal();
      return s.detail;
    }
    initCustomEvent(type, bubbles = false, cancelable = false, detail = null) {
      const s = eventState(this);
      if (!s.custom) throw illegal();
      requireArgs(1, arguments.length, "execute 'initCustomEvent' on 'CustomEvent'");
      type = toDOMString(type);
      if (s.dispatching) return;
      call(initEventMethod, this, type, bubbles, cancelable);
      s.detail = detail;
    }
  }
  webidl(CustomEvent, "CustomEvent");

  // ---- EventTarget ----------------------------------------------------------
  // A listener: { type, callback, capture, passive, once, signal, removed,
  // unsub } where unsub drops the abort algorithm its signal holds.
  const targetStates = new WeakMapCtor();
  function targetState(t) {
    const s = call(WeakMapGet, targetStates, t);
    if (s === undefined) throw illegal();
    return s;
  }
  function toCallback(v, what) {
    if (v === undefined || v === null) return null;
    if (!isObject(v)) throw new TypeErrorCtor(`Failed to execute '${what}' on 'EventTarget': The callback provided as parameter 2 is not an object.`);
    return v;
  }
  function appendListener(ts, rec) { push(ts.listeners, rec); }
  function removeListener(ts, rec) {
    rec.removed = true;
    const list = ts.listeners;
    const n = list.length;
    for (let i = 0; i < n; i++) {
      if (list[i] !== rec) continue;
      for (let j = i + 1; j < n; j++) list[j - 1] = list[j];
      list.length = n - 1;
      break;
    }
    const unsub = rec.unsub;
    if (unsub !== null) { rec.unsub = null; unsub(); }
  }
  function findListener(ts, type, callback, capture) {
    const list = ts.listeners;
    for (let i = 0; i < list.length; i++) {
      const l = list[i];
      if (l.type === type && l.callback === callback && l.capture === capture) return l;
    }
    return null;
  }
  function callListener(callback, event, thisArg) {
    if (typeof callback === "function") {
      ReflectApply(callback, thisArg, [event]);
      return;
    }
    const handleEvent = callback.handleEvent;
    if (typeof handleEvent !== "function") {
      throw new TypeErrorCtor("The provided event listener has no callable 'handleEvent' property.");
    }
    ReflectApply(handleEvent, callback, [event]);
  }
  // "Invoke" for the single item of the path: capture listeners run in the
  // capturing pass, the others in the bubbling pass.
  function invoke(target, ts, event, es, capturing) {
    if (es.stopProp) return;
    es.currentTarget = target;
    const src = ts.listeners;
    const n = src.length;
    const listeners = newList();
    for (let i = 0; i < n; i++) listeners[i] = src[i];
    for (let i = 0; i < n; i++) {
      const l = listeners[i];
      if (l.removed || l.type !== es.type || l.capture !== capturing) continue;
      if (l.once) removeListener(ts, l);
      if (l.passive) es.inPassive = true;
      try {
        callListener(l.callback, event, target);
      } catch (err) {
        report(err);
      }
      es.inPassive = false;
      if (es.stopImmediate) break;
    }
  }
  function dispatch(target, ts, event, es) {
    es.dispatching = true;
    es.target = target;
    try {
      es.phase = AT_TARGET;
      invoke(target, ts, event, es, true);
      invoke(target, ts, event, es, false);
    } finally {
      es.phase = NONE;
      es.currentTarget = null;
      es.dispatching = false;
      es.stopProp = false;
      es.stopImmediate = false;
    }
    return !es.canceled;
  }

  class EventTarget {
    constructor() {
      call(WeakMapSet, targetStates, this, { __proto__: null, listeners: newList(), handlers: null });
    }
    addEventListener(type, callback, options = undefined) {
      const ts = targetState(this);
      requireArgs(2, arguments.length, "execute 'addEventListener' on 'EventTarget'");
      type = toDOMString(type);
      callback = toCallback(callback, "addEventListener");
      let capture = false, once = false, passive = false, signal = null;
      if (isObject(options)) {
        capture = !!options.capture;
        once = !!options.once;
        const p = options.passive;
        passive = p !== undefined && !!p;
        const s = options.signal;
        if (s !== undefined) {
          if (!isAbortSignal(s)) {
            throw new TypeErrorCtor("Failed to execute 'addEventListener' on 'EventTarget': Failed to read the 'signal' property from 'AddEventListenerOptions': Failed to convert value to 'AbortSignal'.");
          }
          signal = s;
        }
      } else if (options !== undefined && options !== null) {
        capture = !!options;
      }
      if (signal !== null && signalState(signal).reason !== undefined) return;
      if (callback === null) return;
      if (findListener(ts, type, callback, capture) !== null) return;
      const rec = { __proto__: null, type, callback, capture, passive, once, signal, removed: false, unsub: null };
      appendListener(ts, rec);
      if (signal !== null) rec.unsub = addAbortAlgorithm(signalState(signal), () => removeListener(ts, rec));
    }
    removeEventListener(type, callback, options = undefined) {
      const ts = targetState(this);
      requireArgs(2, arguments.length, "execute 'removeEventListener' on 'EventTarget'");
      type = toDOMString(type);
      callback = toCallback(callback, "removeEventListener");
      const capture = isObject(options) ? !!options.capture : !!options;
      if (callback === null) return;
      const l = findListener(ts, type, callback, capture);
      if (l !== null) removeListener(ts, l);
    }
    dispatchEvent(event) {
      const ts = targetState(this);
      requireArgs(1, arguments.length, "execute 'dispatchEvent' on 'EventTarget'");
      if (!isEvent(event)) {
        throw new TypeErrorCtor("Failed to execute 'dispatchEvent' on 'EventTarget': parameter 1 is not of type 'Event'.");
      }
      const es = eventState(event);
      if (es.dispatching || !es.initialized) {
        throw new DOMExceptionCtor("Failed to execute 'dispatchEvent' on 'EventTarget': The event is already being dispatched.", "InvalidStateError");
      }
      es.trusted = false;
      return dispatch(this, ts, event, es);
    }
  }
  webidl(EventTarget, "EventTarget");

  // Event handler IDL attributes (onabort): the handler's listener keeps the
  // place it got when first set to a non-null value; null removes it.
  function getHandler(target, type) {
    const ts = targetState(target);
    const h = ts.handlers === null ? undefined : call(MapGet, ts.handlers, type);
    return h === undefined ? null : h.value;
  }
  function setHandler(target, type, value) {
    const ts = targetState(target);
    // [LegacyTreatNonObjectAsNull]
    if (!isObject(value)) value = null;
    if (ts.handlers === null) ts.handlers = new MapCtor();
    let h = call(MapGet, ts.handlers, type);
    if (value === null) {
      if (h !== undefined) {
        call(MapDelete, ts.handlers, type);
        removeListener(ts, h.rec);
      }
      return;
    }
    if (h !== undefined) { h.value = value; return; }
    h = { __proto__: null, value, rec: null };
    const handler = h;
    const callback = function (event) {
      const f = handler.value;
      if (typeof f !== "function") return;
      const es = eventState(event);
      const ret = ReflectApply(f, es.currentTarget, [event]);
      if (ret === false) setCanceled(es);
    };
    h.rec = { __proto__: null, type, callback, capture: false, passive: false, once: false, signal: null, removed: false, unsub: null };
    call(MapSet, ts.handlers, type, h);
    appendListener(ts, h.rec);
  }

  // ---- AbortSignal ------------------------------------------------------------
  const INTERNAL = {};
  const signalStates = new WeakMapCtor();
  function signalState(s) {
    const st = call(WeakMapGet, signalStates, s);
    if (st === undefined) throw illegal();
    return st;
  }
  function isAbortSignal(v) { return call(WeakMapGet, signalStates, v) !== undefined; }
  function newSignal() { return new AbortSignal(INTERNAL); }
  function addAbortAlgorithm(st, fn) {
    if (st.reason !== undefined) return () => {};
    const entry = { __proto__: null, fn };
    call(SetAdd, st.algorithms, entry);
    return () => { call(SetDelete, st.algorithms, entry); };
  }
  function runAbortSteps(signal, st) {
    const algorithms = setToList(st.algorithms);
    st.algorithms = new SetCtor();
    for (let i = 0; i < algorithms.length; i++) {
      try { ReflectApply(algorithms[i].fn, undefined, []); } catch (err) { report(err); }
    }
    const event = new Event("abort");
    const es = eventState(event);
    es.trusted = true;
    dispatch(signal, targetState(signal), event, es);
  }
  // A dependent signal that aborted no longer needs its sources, nor they it.
  function unlink(dep, ds) {
    const sources = ds.sources;
    if (sources === null) return;
    ds.sources = null;
    const list = setToList(sources);
    for (let i = 0; i < list.length; i++) {
      const ss = signalState(list[i]);
      if (ss.dependents !== null) call(SetDelete, ss.dependents, dep);
    }
  }
  function signalAbort(signal, st, reason) {
    if (st.reason !== undefined) return;
    st.reason = reason === undefined ? abortError() : reason;
    const toAbort = newList();
    if (st.dependents !== null) {
      const deps = setToList(st.dependents);
      st.dependents = null;
      for (let i = 0; i < deps.length; i++) {
        const ds = signalState(deps[i]);
        if (ds.reason !== undefined) continue;
        ds.reason = st.reason;
        unlink(deps[i], ds);
        push(toAbort, deps[i]);
      }
    }
    runAbortSteps(signal, st);
    for (let i = 0; i < toAbort.length; i++) runAbortSteps(toAbort[i], signalState(toAbort[i]));
  }
  // [EnforceRange] unsigned long long
  function toMilliseconds(v) {
    let n = +v;
    if (!NumberIsFinite(n)) throw new TypeErrorCtor("Failed to execute 'timeout' on 'AbortSignal': Value is not a finite number.");
    n = MathTrunc(n);
    if (n < 0 || n > 9007199254740991) {
      throw new TypeErrorCtor("Failed to execute 'timeout' on 'AbortSignal': Value is outside the 'unsigned long long' value range.");
    }
    return n === 0 ? 0 : n;
  }
  function link(dep, ds, src) {
    const ss = signalState(src);
    call(SetAdd, ds.sources, src);
    if (ss.dependents === null) ss.dependents = new SetCtor();
    call(SetAdd, ss.dependents, dep);
  }

  class AbortSignal extends EventTarget {
    constructor() {
      if (arguments[0] !== INTERNAL) throw new TypeErrorCtor("Illegal constructor");
      super();
      call(WeakMapSet, signalStates, this, {
        __proto__: null, reason: undefined, algorithms: new SetCtor(),
        dependent: false, sources: null, dependents: null,
      });
    }
    static abort(reason = undefined) {
      const s = newSignal();
      signalState(s).reason = reason === undefined ? abortError() : reason;
      return s;
    }
    static timeout(milliseconds) {
      requireArgs(1, arguments.length, "execute 'timeout' on 'AbortSignal'");
      const ms = toMilliseconds(milliseconds);
      const s = newSignal();
      const st = signalState(s);
      const fire = () => { signalAbort(s, st, new DOMExceptionCtor("signal timed out", "TimeoutError")); };
      ReflectApply(setTimeoutFn, undefined, [fire, ms > MAX_TIMER_MS ? MAX_TIMER_MS : ms]);
      return s;
    }
    static any(signals) {
      requireArgs(1, arguments.length, "execute 'any' on 'AbortSignal'");
      const what = "Failed to execute 'any' on 'AbortSignal': ";
      // Web IDL sequence<AbortSignal>.
      if (!isObject(signals)) throw new TypeErrorCtor(what + "The provided value cannot be converted to a sequence.");
      const iterFn = signals[SymbolIterator];
      if (typeof iterFn !== "function") throw new TypeErrorCtor(what + "The provided value cannot be converted to a sequence.");
      const it = ReflectApply(iterFn, signals, []);
      if (!isObject(it)) throw new TypeErrorCtor(what + "The iterator is not an object.");
      const next = it.next;
      const list = newList();
      for (;;) {
        const r = ReflectApply(next, it, []);
        if (!isObject(r)) throw new TypeErrorCtor(what + "The iterator result is not an object.");
        if (r.done) break;
        const s = r.value;
        if (!isAbortSignal(s)) throw new TypeErrorCtor(what + `Failed to convert value at index ${list.length} to 'AbortSignal'.`);
        push(list, s);
      }
      const result = newSignal();
      const rs = signalState(result);
      for (let i = 0; i < list.length; i++) {
        const ss = signalState(list[i]);
        if (ss.reason !== undefined) { rs.reason = ss.reason; return result; }
      }
      rs.dependent = true;
      rs.sources = new SetCtor();
      for (let i = 0; i < list.length; i++) {
        const ss = signalState(list[i]);
        if (!ss.dependent) {
          link(result, rs, list[i]);
        } else if (ss.sources !== null) {
          const sources = setToList(ss.sources);
          for (let j = 0; j < sources.length; j++) link(result, rs, sources[j]);
        }
      }
      return result;
    }
    get aborted() { return signalState(this).reason !== undefined; }
    get reason() { return signalState(this).reason; }
    throwIfAborted() {
      const st = signalState(this);
      if (st.reason !== undefined) throw st.reason;
    }
    get onabort() { signalState(this); return getHandler(this, "abort"); }
    set onabort(value) { signalState(this); setHandler(this, "abort", value); }
  }
  webidl(AbortSignal, "AbortSignal");

  // ---- AbortController ------------------------------------------------------
  const controllerSignals = new WeakMapCtor();
  function controllerSignal(c) {
    const s = call(WeakMapGet, controllerSignals, c);
    if (s === undefined) throw illegal();
    return s;
  }
  class AbortController {
    constructor() { call(WeakMapSet, controllerSignals, this, newSignal()); }
    get signal() { return controllerSignal(this); }
    abort(reason = undefined) {
      const s = controllerSignal(this);
      signalAbort(s, signalState(s), reason);
    }
  }
  webidl(AbortController, "AbortController");

  // ---- internal hooks -------------------------------------------------------
  function __addAbortAlgorithm(signal, fn) {
    if (!isAbortSignal(signal)) throw new TypeErrorCtor("__addAbortAlgorithm: the first argument is not an AbortSignal");
    if (typeof fn !== "function") throw new TypeErrorCtor("__addAbortAlgorithm: the abort algorithm must be a function");
    return addAbortAlgorithm(signalState(signal), fn);
  }
  function __platformBrand(v) {
    if (!isObject(v)) return null;
    if (call(WeakMapGet, controllerSignals, v) !== undefined) return "AbortController";
    if (isAbortSignal(v)) return "AbortSignal";
    if (call(WeakMapGet, targetStates, v) !== undefined) return "EventTarget";
    const es = call(WeakMapGet, eventStates, v);
    if (es !== undefined) return es.custom ? "CustomEvent" : "Event";
    return null;
  }

  return {
    Event, EventTarget, CustomEvent, AbortController, AbortSignal,
    __addAbortAlgorithm, __isAbortSignal: isAbortSignal, __platformBrand,
  };
})
