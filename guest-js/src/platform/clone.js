// The "clone" group: structuredClone, after the HTML structured serialize and
// deserialize algorithms (https://html.spec.whatwg.org/multipage/structured-data.html),
// fused into one pass that builds the copy while it walks the value (getters
// run once, in the order serialization runs them). The walk keeps its own
// stack: nesting depth is bounded by memory, not by the native stack.
(function (platform, load) {
  "use strict";
  const G = globalThis;
  // Captured when the group loads: a script's later changes to built-ins,
  // prototypes or species do not reach the copy.
  const ReflectApply = Reflect.apply;
  const FunctionCall = Function.prototype.call;
  const FunctionBind = Function.prototype.bind;
  // uncurry(f)(self, ...args) is f.call(self, ...args), with no lookup a script can redirect.
  const uncurry = (f) => ReflectApply(FunctionBind, FunctionCall, [f]);
  const ReflectDefine = Reflect.defineProperty;
  const ObjectCtor = Object;
  const ObjectKeys = Object.keys;
  const ObjectGetProto = Object.getPrototypeOf;
  const ObjectSetProto = Object.setPrototypeOf;
  const ObjectGetOwnDesc = Object.getOwnPropertyDescriptor;
  const ObjectProto = Object.prototype;
  const ObjectHasOwn = Object.prototype.hasOwnProperty;
  const ObjectToString = Object.prototype.toString;
  const FunctionToString = Function.prototype.toString;
  const ArrayIsArray = Array.isArray;
  const StringCtor = String;
  const TypeErrorCtor = TypeError;
  const ErrorCtor = Error;
  const ErrorIsError = typeof Error.isError === "function" ? Error.isError : null;
  const SymbolIterator = Symbol.iterator;
  const MathMin = Math.min;
  const MapCtor = Map;
  const MapGet = Map.prototype.get, MapSet = Map.prototype.set, MapHas = Map.prototype.has;
  const MapEntries = Map.prototype.entries;
  const MapIterNext = ObjectGetProto(new Map().entries()).next;
  const SetCtor = Set;
  const SetAdd = Set.prototype.add, SetValues = Set.prototype.values;
  const SetIterNext = ObjectGetProto(new Set().values()).next;
  const MapSize = ObjectGetOwnDesc(Map.prototype, "size").get;
  const SetSize = ObjectGetOwnDesc(Set.prototype, "size").get;
  const DateCtor = Date;
  const DateGetTime = Date.prototype.getTime;
  const RegExpCtor = RegExp;
  const RegExpProto = RegExp.prototype;
  const DOMExceptionCtor = typeof G.DOMException === "function" ? G.DOMException : null;
  const ArrayBufferCtor = ArrayBuffer;
  const ABProto = ArrayBuffer.prototype;
  const Uint8ArrayCtor = Uint8Array;
  const TypedArrayProto = ObjectGetProto(Uint8Array.prototype);
  const DataViewCtor = DataView;

  function getter(obj, name) {
    if (obj === null || obj === undefined) return null;
    const d = ObjectGetOwnDesc(obj, name);
    return d !== undefined && typeof d.get === "function" ? d.get : null;
  }
  function method(obj, name) {
    if (obj === null || obj === undefined) return null;
    const d = ObjectGetOwnDesc(obj, name);
    return d !== undefined && typeof d.value === "function" ? d.value : null;
  }
  const RegExpSource = getter(RegExpProto, "source");
  // [[OriginalFlags]], read through the brand-checked flag getters, in the
  // order RegExp.prototype.flags uses.
  const REGEXP_FLAGS = [];
  {
    const flags = [["hasIndices", "d"], ["global", "g"], ["ignoreCase", "i"], ["multiline", "m"],
      ["dotAll", "s"], ["unicode", "u"], ["unicodeSets", "v"], ["sticky", "y"]];
    for (let i = 0; i < flags.length; i++) {
      const g = getter(RegExpProto, flags[i][0]);
      if (g !== null) REGEXP_FLAGS[REGEXP_FLAGS.length] = [g, flags[i][1]];
    }
  }
  const ABByteLength = getter(ABProto, "byteLength");
  const ABResizable = getter(ABProto, "resizable");
  const ABMaxByteLength = getter(ABProto, "maxByteLength");
  const ABDetached = getter(ABProto, "detached");
  const ABTransfer = method(ABProto, "transfer");
  const ABResize = method(ABProto, "resize");
  const SABProto = typeof G.SharedArrayBuffer === "function" ? G.SharedArrayBuffer.prototype : null;
  const SABByteLength = getter(SABProto, "byteLength");
  const TATag = getter(TypedArrayProto, Symbol.toStringTag);
  const TABuffer = getter(TypedArrayProto, "buffer");
  const TAByteOffset = getter(TypedArrayProto, "byteOffset");
  const TAByteLength = getter(TypedArrayProto, "byteLength");
  const TALength = getter(TypedArrayProto, "length");
  const TASet = method(TypedArrayProto, "set");
  const DVBuffer = getter(DataViewCtor.prototype, "buffer");
  const DVByteOffset = getter(DataViewCtor.prototype, "byteOffset");
  const DVByteLength = getter(DataViewCtor.prototype, "byteLength");

  const typedArrays = { __proto__: null };
  {
    const names = ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array",
      "Uint32Array", "Float16Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"];
    for (let i = 0; i < names.length; i++) {
      const C = G[names[i]];
      if (typeof C === "function") typedArrays[names[i]] = C;
    }
  }
  // The error constructors a deserialized error may have (others become Error).
  const errorCtors = { __proto__: null };
  {
    const names = ["Error", "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError"];
    for (let i = 0; i < names.length; i++) errorCtors[names[i]] = G[names[i]];
  }

  function call(f, self, ...args) { return ReflectApply(f, self, args); }
  function newList() { return ObjectSetProto([], null); }
  function isObject(v) { return (typeof v === "object" && v !== null) || typeof v === "function"; }
  const hasOwn = uncurry(ObjectHasOwn);
  const mapGet = uncurry(MapGet), mapSet = uncurry(MapSet), mapHas = uncurry(MapHas);
  const setAdd = uncurry(SetAdd);
  const typedArrayTag = uncurry(TATag);
  function brand(f, v, ...args) {
    if (f === null) return false;
    try { ReflectApply(f, v, args); return true; } catch (_) { return false; }
  }
  function dataCloneError(message) {
    if (DOMExceptionCtor !== null) return new DOMExceptionCtor(message, "DataCloneError");
    const e = new ErrorCtor(message);
    e.name = "DataCloneError";
    return e;
  }

  // ---- what kind of object a value is ---------------------------------------
  const K_PLAIN = 1, K_ARRAY = 2, K_DATE = 3, K_REGEXP = 4, K_BOOLEAN = 5, K_NUMBER = 6, K_STRING = 7,
    K_BIGINT = 8, K_ARRAYBUFFER = 9, K_TYPED = 10, K_DATAVIEW = 11, K_MAP = 12, K_SET = 13, K_ERROR = 14,
    K_DOMEXCEPTION = 15, K_SAB = 16, K_SYMBOL = 17, K_NAMED = 18, K_GENERATOR = 19, K_ASYNCGENERATOR = 20,
    K_OPAQUE = 21, K_PROMISE = 22, K_OBJECT_PROTO = 23;

  const NOTHING = {};
  const WeakMapHas = typeof WeakMap === "function" ? WeakMap.prototype.has : null;
  const WeakSetHas = typeof WeakSet === "function" ? WeakSet.prototype.has : null;
  const WeakRefDeref = typeof G.WeakRef === "function" ? G.WeakRef.prototype.deref : null;
  const FinRegUnregister = typeof G.FinalizationRegistry === "function" ? G.FinalizationRegistry.prototype.unregister : null;
  const BooleanValueOf = Boolean.prototype.valueOf;
  const NumberValueOf = Number.prototype.valueOf;
  const StringValueOf = String.prototype.valueOf;
  const BigIntValueOf = typeof BigInt === "function" ? BigInt.prototype.valueOf : null;
  const SymbolValueOf = Symbol.prototype.valueOf;
  const DOMExceptionName = DOMExceptionCtor !== null ? getter(DOMExceptionCtor.prototype, "name") : null;
  const DOMExceptionMessage = DOMExceptionCtor !== null ? getter(DOMExceptionCtor.prototype, "message") : null;

  // The nearest built-in prototype on an object's chain tells what to
  // brand-check it for; the check decides.
  const protoKinds = new MapCtor();
  function addProto(proto, kind) { if (isObject(proto)) mapSet(protoKinds, proto, kind); }
  function tryProto(make, kind) { try { addProto(ObjectGetProto(make()), kind); } catch (_) { /* not in this engine */ } }
  addProto(ObjectProto, K_OBJECT_PROTO);
  addProto(Boolean.prototype, K_BOOLEAN);
  addProto(Number.prototype, K_NUMBER);
  addProto(String.prototype, K_STRING);
  if (BigIntValueOf !== null) addProto(BigInt.prototype, K_BIGINT);
  addProto(Symbol.prototype, K_SYMBOL);
  addProto(Date.prototype, K_DATE);
  addProto(RegExpProto, K_REGEXP);
  addProto(ABProto, K_ARRAYBUFFER);
  addProto(SABProto, K_SAB);
  addProto(DataViewCtor.prototype, K_DATAVIEW);
  addProto(Map.prototype, K_MAP);
  addProto(Set.prototype, K_SET);
  addProto(Error.prototype, K_ERROR);
  if (DOMExceptionCtor !== null) addProto(DOMExceptionCtor.prototype, K_DOMEXCEPTION);
  addProto(Promise.prototype, K_PROMISE);
  if (WeakMapHas !== null) addProto(WeakMap.prototype, K_NAMED);
  if (WeakSetHas !== null) addProto(WeakSet.prototype, K_NAMED);
  if (WeakRefDeref !== null) addProto(G.WeakRef.prototype, K_NAMED);
  if (FinRegUnregister !== null) addProto(G.FinalizationRegistry.prototype, K_NAMED);
  try { addProto(ObjectGetProto(function* () {}).prototype, K_GENERATOR); } catch (_) { /* no generators */ }
  try { addProto(ObjectGetProto(async function* () {}).prototype, K_ASYNCGENERATOR); } catch (_) { /* none */ }
  // Built-in iterators (%MapIteratorPrototype%, ...), not %IteratorPrototype%:
  // a script's own iterator objects are ordinary objects.
  tryProto(() => call(MapEntries, new MapCtor()), K_OPAQUE);
  tryProto(() => call(SetValues, new SetCtor()), K_OPAQUE);
  tryProto(() => [][SymbolIterator](), K_OPAQUE);
  tryProto(() => ""[SymbolIterator](), K_OPAQUE);
  tryProto(() => call(RegExpProto[Symbol.matchAll], /a/g, ""), K_OPAQUE);
  if (typeof G.Iterator === "function") {
    tryProto(() => call(G.Iterator.prototype.map, [][SymbolIterator](), (x) => x), K_OPAQUE);
    tryProto(() => G.Iterator.from({ next() { return { done: true, value: undefined }; } }), K_OPAQUE);
  }

  function isArrayBuffer(v) { return brand(ABByteLength, v); }
  function isError(v) {
    if (ErrorIsError !== null) return ErrorIsError(v);
    return call(ObjectToString, v) === "[object Error]";
  }
  function brandFor(kind, v) {
    switch (kind) {
      case K_BOOLEAN: return brand(BooleanValueOf, v);
      case K_NUMBER: return brand(NumberValueOf, v);
      case K_STRING: return brand(StringValueOf, v);
      case K_BIGINT: return brand(BigIntValueOf, v);
      case K_SYMBOL: return brand(SymbolValueOf, v);
      case K_DATE: return brand(DateGetTime, v);
      case K_REGEXP: return v !== RegExpProto && brand(RegExpSource, v);
      case K_ARRAYBUFFER: return isArrayBuffer(v);
      case K_SAB: return brand(SABByteLength, v);
      case K_DATAVIEW: return brand(DVBuffer, v);
      case K_MAP: return brand(MapSize, v);
      case K_SET: return brand(SetSize, v);
      case K_ERROR: return isError(v);
      case K_DOMEXCEPTION: return DOMExceptionName === null || brand(DOMExceptionName, v);
      case K_NAMED:
        return brand(WeakMapHas, v, NOTHING) || brand(WeakSetHas, v, NOTHING) ||
          brand(WeakRefDeref, v) || brand(FinRegUnregister, v, NOTHING);
      // No side-effect-free brand checks: the prototype decides.
      case K_PROMISE: case K_GENERATOR: case K_ASYNCGENERATOR: case K_OPAQUE: return true;
    }
    return false;
  }

  // Platform objects (Event, AbortSignal, ...) come from the "events" group;
  // it is asked only for objects that are not plain, and only once loaded.
  let platformBrand;
  function platformName(v) {
    if (platformBrand === undefined) {
      platformBrand = null;
      try {
        const ev = typeof load === "function" ? load("events") : null;
        if (isObject(ev) && typeof ev.__platformBrand === "function") platformBrand = ev.__platformBrand;
      } catch (_) { /* no events group: no platform objects either */ }
    }
    return platformBrand === null ? null : platformBrand(v);
  }

  function classify(v) {
    if (ArrayIsArray(v)) return K_ARRAY;
    const proto = ObjectGetProto(v);
    if (proto !== ObjectProto) {
      if (typedArrayTag(v) !== undefined) return K_TYPED;
      for (let p = proto, i = 0; p !== null && i < 100000; p = ObjectGetProto(p), i++) {
        const kind = mapGet(protoKinds, p);
        if (kind === undefined) continue;
        if (kind !== K_OBJECT_PROTO && brandFor(kind, v)) return kind;
        break;
      }
    }
    // Objects whose prototype was swapped for a plain one.
    if (ErrorIsError !== null && ErrorIsError(v)) return K_ERROR;
    if (hasOwn(v, "callee") && call(ObjectToString, v) === "[object Arguments]") return K_OPAQUE;
    if (proto !== ObjectProto && proto !== null && platformName(v) !== null) return K_NAMED;
    return K_PLAIN;
  }

  // The constructor name V8 shows in "#<Name> could not be cloned.".
  function ctorName(v) {
    for (let p = v, i = 0; p !== null && i < 1000; p = ObjectGetProto(p), i++) {
      const d = ObjectGetOwnDesc(p, "constructor");
      if (d === undefined || !hasOwn(d, "value") || typeof d.value !== "function") continue;
      const n = ObjectGetOwnDesc(d.value, "name");
      if (n !== undefined && hasOwn(n, "value") && typeof n.value === "string" && n.value !== "") return n.value;
    }
    return "Object";
  }
  function uncloneable(kind, v) {
    switch (kind) {
      case K_SYMBOL: return dataCloneError("[object Symbol] could not be cloned.");
      case K_GENERATOR: return dataCloneError("[object Generator] could not be cloned.");
      case K_ASYNCGENERATOR: return dataCloneError("[object AsyncGenerator] could not be cloned.");
      case K_OPAQUE: return dataCloneError("#<Object> could not be cloned.");
      case K_SAB: return dataCloneError("#<SharedArrayBuffer> could not be cloned.");
    }
    let name;
    try { name = ctorName(v); } catch (_) { name = "Object"; }
    return dataCloneError(`#<${name}> could not be cloned.`);
  }
  function functionText(f) {
    try { return call(FunctionToString, f); } catch (_) { return "#<Function>"; }
  }

  // ---- building the copy ----------------------------------------------------
  // One reused descriptor object (no prototype, so a script's
  // Object.prototype.get/set cannot turn it into an accessor).
  const DATA = { __proto__: null, value: undefined, writable: true, enumerable: true, configurable: true };
  const HIDDEN = { __proto__: null, value: undefined, writable: true, enumerable: false, configurable: true };
  function defineData(o, k, v) { DATA.value = v; ReflectDefine(o, k, DATA); DATA.value = undefined; }
  function defineHidden(o, k, v) { HIDDEN.value = v; ReflectDefine(o, k, HIDDEN); HIDDEN.value = undefined; }

  function isDetached(b) {
    if (ABDetached !== null) return call(ABDetached, b);
    try { new Uint8ArrayCtor(b); return false; } catch (_) { return true; }
  }
  function newBufferLike(b) {
    const len = call(ABByteLength, b);
    if (ABResizable !== null && call(ABResizable, b)) {
      return new ArrayBufferCtor(len, { __proto__: null, maxByteLength: call(ABMaxByteLength, b) });
    }
    return new ArrayBufferCtor(len);
  }
  function copyBytes(from, to) {
    const n = MathMin(call(ABByteLength, from), call(ABByteLength, to));
    if (n > 0) call(TASet, new Uint8ArrayCtor(to, 0, n), new Uint8ArrayCtor(from, 0, n));
  }
  function cloneBuffer(b) {
    if (isDetached(b)) throw dataCloneError("An ArrayBuffer is detached and could not be cloned.");
    const out = newBufferLike(b);
    copyBytes(b, out);
    return out;
  }
  // Whether a view on a resizable buffer tracks the buffer's length. Nothing
  // tells directly: resize the buffer by one element and back (no script runs
  // in between; bytes a shrink drops are put back).
  function isLengthTracking(view, buf, byteLength, elementSize) {
    if (ABResizable === null || ABResize === null) return false;
    try {
      if (!call(ABResizable, buf) || isDetached(buf)) return false;
      const len = call(ABByteLength, buf), max = call(ABMaxByteLength, buf);
      const before = call(byteLength, view);
      if (len + elementSize <= max) {
        call(ABResize, buf, len + elementSize);
        let after;
        try { after = call(byteLength, view); } finally { call(ABResize, buf, len); }
        return after !== before;
      }
      if (len < elementSize) return false;
      const tail = new Uint8ArrayCtor(elementSize);
      call(TASet, tail, new Uint8ArrayCtor(buf, len - elementSize, elementSize));
      call(ABResize, buf, len - elementSize);
      let after;
      try { after = call(byteLength, view); } catch (_) { after = -1; } finally {
        call(ABResize, buf, len);
        call(TASet, new Uint8ArrayCtor(buf, len - elementSize, elementSize), tail);
      }
      return after > 0 && after !== before;
    } catch (_) {
      return false;
    }
  }

  // Frames of the explicit work stack.
  const F_PROPS = 1, F_MAP = 2, F_SET = 3, F_CAUSE = 4;
  function pushFrame(cx, frame) { cx.stack[cx.sp++] = frame; }
  function remember(cx, v, out) { mapSet(cx.memory, v, out); }
  function transferTarget(cx, rec) {
    if (rec.out === null) {
      rec.out = newBufferLike(rec.src);
      remember(cx, rec.src, rec.out);
    }
    return rec.out;
  }

  // The copy of `v`: made at once, with its contents left to a frame.
  function prepare(v, cx) {
    const t = typeof v;
    if (t !== "object" && t !== "function") {
      if (t === "symbol") throw dataCloneError(`${StringCtor(v)} could not be cloned.`);
      return v;
    }
    if (v === null) return v;
    const seen = mapGet(cx.memory, v);
    if (seen !== undefined) return seen;
    if (cx.transfers !== null) {
      const rec = mapGet(cx.transfers, v);
      if (rec !== undefined) return transferTarget(cx, rec);
    }
    if (t === "function") throw dataCloneError(`${functionText(v)} could not be cloned.`);
    const kind = classify(v);
    let out;
    switch (kind) {
      case K_PLAIN: {
        out = {};
        remember(cx, v, out);
        const keys = ObjectKeys(v);
        if (keys.length !== 0) pushFrame(cx, { __proto__: null, kind: F_PROPS, src: v, out, keys, i: 0 });
        return out;
      }
      case K_ARRAY: {
        const length = v.length;
        out = [];
        out.length = length;
        remember(cx, v, out);
        const keys = ObjectKeys(v);
        if (keys.length !== 0) pushFrame(cx, { __proto__: null, kind: F_PROPS, src: v, out, keys, i: 0 });
        return out;
      }
      case K_MAP: {
        const list = newList();
        const it = call(MapEntries, v);
        for (;;) {
          const r = call(MapIterNext, it);
          if (r.done) break;
          const entry = r.value;
          list[list.length] = entry[0];
          list[list.length] = entry[1];
        }
        out = new MapCtor();
        remember(cx, v, out);
        pushFrame(cx, { __proto__: null, kind: F_MAP, list, out, i: 0, key: undefined });
        return out;
      }
      case K_SET: {
        const list = newList();
        const it = call(SetValues, v);
        for (;;) {
          const r = call(SetIterNext, it);
          if (r.done) break;
          list[list.length] = r.value;
        }
        out = new SetCtor();
        remember(cx, v, out);
        pushFrame(cx, { __proto__: null, kind: F_SET, list, out, i: 0 });
        return out;
      }
      case K_ERROR: {
        let name = v.name;
        if (typeof name !== "string" || errorCtors[name] === undefined) name = "Error";
        const md = ObjectGetOwnDesc(v, "message");
        const message = md !== undefined && hasOwn(md, "value") ? `${md.value}` : undefined;
        const stack = v.stack;
        const cd = ObjectGetOwnDesc(v, "cause");
        const Ctor = errorCtors[name];
        out = message === undefined ? new Ctor() : new Ctor(message);
        defineHidden(out, "stack", typeof stack === "string" ? stack : undefined);
        remember(cx, v, out);
        if (cd !== undefined && hasOwn(cd, "value")) {
          pushFrame(cx, { __proto__: null, kind: F_CAUSE, value: cd.value, out });
        }
        return out;
      }
      case K_DOMEXCEPTION: {
        const name = DOMExceptionName !== null ? call(DOMExceptionName, v) : v.name;
        const message = DOMExceptionMessage !== null ? call(DOMExceptionMessage, v) : v.message;
        const stack = v.stack;
        out = new DOMExceptionCtor(`${message}`, `${name}`);
        if (typeof stack === "string") defineHidden(out, "stack", stack);
        break;
      }
      case K_DATE: out = new DateCtor(call(DateGetTime, v)); break;
      case K_REGEXP: {
        let flags = "";
        for (let i = 0; i < REGEXP_FLAGS.length; i++) if (call(REGEXP_FLAGS[i][0], v)) flags += REGEXP_FLAGS[i][1];
        out = new RegExpCtor(call(RegExpSource, v), flags);
        break;
      }
      case K_BOOLEAN: out = ObjectCtor(call(BooleanValueOf, v)); break;
      case K_NUMBER: out = ObjectCtor(call(NumberValueOf, v)); break;
      case K_STRING: out = ObjectCtor(call(StringValueOf, v)); break;
      case K_BIGINT: out = ObjectCtor(call(BigIntValueOf, v)); break;
      case K_ARRAYBUFFER: out = cloneBuffer(v); break;
      case K_TYPED: {
        const Ctor = typedArrays[typedArrayTag(v)];
        if (Ctor === undefined) throw uncloneable(K_NAMED, v);
        const buf = call(TABuffer, v);
        const outBuf = prepare(buf, cx);
        const offset = call(TAByteOffset, v);
        out = isLengthTracking(v, buf, TAByteLength, Ctor.BYTES_PER_ELEMENT)
          ? new Ctor(outBuf, offset)
          : new Ctor(outBuf, offset, call(TALength, v));
        break;
      }
      case K_DATAVIEW: {
        const buf = call(DVBuffer, v);
        const outBuf = prepare(buf, cx);
        let offset, length;
        try {
          offset = call(DVByteOffset, v);
          length = call(DVByteLength, v);
        } catch (_) {
          throw dataCloneError("A DataView that is out of bounds could not be cloned.");
        }
        out = isLengthTracking(v, buf, DVByteLength, 1)
          ? new DataViewCtor(outBuf, offset)
          : new DataViewCtor(outBuf, offset, length);
        break;
      }
      default:
        throw uncloneable(kind, v);
    }
    remember(cx, v, out);
    return out;
  }

  // Depth first, one property or entry per step, as serialization recurses.
  function run(cx) {
    const stack = cx.stack;
    while (cx.sp > 0) {
      const f = stack[cx.sp - 1];
      switch (f.kind) {
        case F_PROPS: {
          const keys = f.keys;
          if (f.i >= keys.length) { stack[--cx.sp] = undefined; break; }
          const key = keys[f.i++];
          const src = f.src;
          // A getter may have deleted a later property.
          if (!hasOwn(src, key)) break;
          let value = src[key];
          if ((typeof value === "object" && value !== null) || typeof value === "function" || typeof value === "symbol") {
            value = prepare(value, cx);
          }
          defineData(f.out, key, value);
          break;
        }
        case F_MAP: {
          const list = f.list;
          if (f.i >= list.length) { stack[--cx.sp] = undefined; break; }
          const i = f.i++;
          const c = prepare(list[i], cx);
          if ((i & 1) === 0) {
            f.key = c;
          } else {
            mapSet(f.out, f.key, c);
            f.key = undefined;
          }
          break;
        }
        case F_SET: {
          const list = f.list;
          if (f.i >= list.length) { stack[--cx.sp] = undefined; break; }
          setAdd(f.out, prepare(list[f.i++], cx));
          break;
        }
        case F_CAUSE: {
          stack[--cx.sp] = undefined;
          const value = prepare(f.value, cx);
          defineHidden(f.out, "cause", value);
          break;
        }
      }
    }
  }

  // StructuredSerializeOptions.transfer: a sequence<object> of ArrayBuffers.
  function transferList(list, cx) {
    const what = "Failed to execute 'structuredClone': Failed to read the 'transfer' property from 'StructuredSerializeOptions': ";
    if (!isObject(list)) throw new TypeErrorCtor(what + "The provided value cannot be converted to a sequence.");
    const iterFn = list[SymbolIterator];
    if (typeof iterFn !== "function") throw new TypeErrorCtor(what + "The provided value cannot be converted to a sequence.");
    const it = ReflectApply(iterFn, list, []);
    if (!isObject(it)) throw new TypeErrorCtor(what + "The iterator is not an object.");
    const next = it.next;
    const items = newList();
    for (;;) {
      const r = ReflectApply(next, it, []);
      if (!isObject(r)) throw new TypeErrorCtor(what + "The iterator result is not an object.");
      if (r.done) break;
      const item = r.value;
      if (!isObject(item)) throw new TypeErrorCtor(what + `The value at index ${items.length} is not an object.`);
      items[items.length] = item;
    }
    const recs = newList();
    if (items.length === 0) return recs;
    const transfers = new MapCtor();
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (!isArrayBuffer(item)) throw dataCloneError(`Value at index ${i} does not have a transferable type.`);
      if (mapHas(transfers, item)) {
        throw dataCloneError(`ArrayBuffer at index ${i} is a duplicate of an earlier ArrayBuffer. Duplicate ArrayBuffers cannot be transferred.`);
      }
      if (ABTransfer === null) throw dataCloneError("Transferring an ArrayBuffer is not supported here (no ArrayBuffer.prototype.transfer).");
      const rec = { __proto__: null, src: item, index: i, out: null };
      mapSet(transfers, item, rec);
      recs[recs.length] = rec;
    }
    cx.transfers = transfers;
    return recs;
  }

  // After a successful walk: move each transferred buffer's bytes into its
  // copy and detach it. A buffer that is the value itself moves whole.
  function finishTransfers(recs, value, result) {
    for (let i = 0; i < recs.length; i++) {
      if (isDetached(recs[i].src)) throw dataCloneError(`ArrayBuffer at index ${recs[i].index} is already detached.`);
    }
    for (let i = 0; i < recs.length; i++) {
      const rec = recs[i];
      if (rec.src === value && rec.out === null) {
        result = call(ABTransfer, rec.src);
        continue;
      }
      if (rec.out !== null) {
        const len = call(ABByteLength, rec.src);
        if (ABResize !== null && call(ABResizable, rec.out) && call(ABByteLength, rec.out) !== len) {
          try { call(ABResize, rec.out, len); } catch (_) { /* keep what fits */ }
        }
        copyBytes(rec.src, rec.out);
      }
      call(ABTransfer, rec.src, 0);
    }
    return result;
  }

  function structuredClone(value) {
    if (arguments.length === 0) {
      throw new TypeErrorCtor("Failed to execute 'structuredClone': 1 argument required, but only 0 present.");
    }
    const options = arguments.length > 1 ? arguments[1] : undefined;
    const cx = { __proto__: null, memory: new MapCtor(), transfers: null, stack: newList(), sp: 0 };
    let recs = null;
    if (options !== undefined && options !== null) {
      if (!isObject(options)) {
        throw new TypeErrorCtor("Failed to execute 'structuredClone': The provided value is not of type 'StructuredSerializeOptions'.");
      }
      const list = options.transfer;
      if (list !== undefined) recs = transferList(list, cx);
    }
    let result;
    if (cx.transfers === null || !mapHas(cx.transfers, value)) {
      result = prepare(value, cx);
      run(cx);
    }
    if (recs !== null && recs.length > 0) result = finishTransfers(recs, value, result);
    return result;
  }

  return { structuredClone };
})
