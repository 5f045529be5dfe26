// Tests for src/platform/clone.js (the "clone" group): structuredClone. The
// file is evaluated as a strict script in a fresh vm context holding only what
// the sandbox provides; each value is built in that realm and in node's, cloned
// by ours and by node's structuredClone, and the two copies are compared
// through a realm-independent description.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import vm from "node:vm";

const SRC = fs.readFileSync(new URL("../../src/platform/clone.js", import.meta.url), "utf8");
const EVENTS_SRC = fs.readFileSync(new URL("../../src/platform/events.js", import.meta.url), "utf8");

// Node 20 has no ArrayBuffer.prototype.transfer (QuickJS-ng has): the test
// realm gets a stand-in built on node's own transfer support, installed
// before the file loads, as the engine's would be.
const hostDetach = (buffer) => { structuredClone(buffer, { transfer: [buffer] }); };
const TRANSFER_STANDIN = `
  if (typeof ArrayBuffer.prototype.transfer !== "function") {
    const detach = globalThis.__hostDetach;
    Object.defineProperty(ArrayBuffer.prototype, "transfer", {
      value: function transfer(newLength) {
        const len = this.byteLength;
        const n = newLength === undefined ? len : newLength;
        const out = this.resizable ? new ArrayBuffer(n, { maxByteLength: this.maxByteLength }) : new ArrayBuffer(n);
        new Uint8Array(out).set(new Uint8Array(this, 0, Math.min(n, len)));
        detach(this);
        return out;
      },
      writable: true, configurable: true,
    });
  }
  delete globalThis.__hostDetach;
`;
// Whether a buffer is detached, in either realm (node 20 has no .detached).
function isDetached(b) {
  try { new Uint8Array(b); return false; } catch { return true; }
}
globalThis.isDetached = isDetached;

function load({ prelude = "", events = false } = {}) {
  const ctx = vm.createContext({ DOMException, setTimeout, clearTimeout, queueMicrotask, console, performance,
    isDetached, __hostDetach: hostDetach });
  vm.runInContext("delete globalThis.structuredClone; delete globalThis.EventTarget;" + TRANSFER_STANDIN + prelude, ctx);
  let eventsExports = null;
  const loads = [];
  const loadGroup = (group) => {
    loads.push(group);
    if (group === "events" && events) {
      if (eventsExports === null) eventsExports = vm.runInContext(EVENTS_SRC, ctx)({}, loadGroup);
      return eventsExports;
    }
    throw new Error(`no group ${group}`);
  };
  const factory = vm.runInContext('"use strict";\n' + SRC, ctx, { filename: "clone.js" });
  assert.equal(typeof factory, "function");
  const ex = factory({}, loadGroup);
  Object.defineProperty(ctx, "structuredClone", { value: ex.structuredClone, writable: true, configurable: true, enumerable: false });
  if (events) {
    for (const [k, v] of Object.entries(loadGroup("events"))) {
      if (!k.startsWith("__")) Object.defineProperty(ctx, k, { value: v, writable: true, configurable: true, enumerable: false });
    }
    loads.length = 0;
  }
  return { ctx, ex, loads, run: (code) => vm.runInContext(code, ctx) };
}

const shared = load();

// ---- realm-independent description of a value --------------------------------
const INTRINSICS = ["Object", "Array", "Map", "Set", "Date", "RegExp", "ArrayBuffer", "SharedArrayBuffer", "DataView",
  "Error", "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError", "AggregateError",
  "Boolean", "Number", "String", "BigInt", "Symbol", "Promise", "Int8Array", "Uint8Array", "Uint8ClampedArray",
  "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float16Array", "Float32Array", "Float64Array",
  "BigInt64Array", "BigUint64Array", "DOMException"];
function intrinsicNames(global) {
  const m = new Map([[null, "null"]]);
  for (const n of INTRINSICS) if (typeof global[n] === "function") m.set(global[n].prototype, n + ".prototype");
  return m;
}
const MAIN = intrinsicNames(globalThis);
const CTX = intrinsicNames(shared.run("globalThis"));

function describe(root, names) {
  const ids = new Map();
  const tagOf = (v) => Object.prototype.toString.call(v);
  function prim(v) {
    if (typeof v === "number") return Object.is(v, -0) ? "number:-0" : `number:${v}`;
    if (typeof v === "bigint") return `bigint:${v}`;
    if (typeof v === "string") return `string:${JSON.stringify(v)}`;
    return `${typeof v}:${String(v)}`;
  }
  function d(v) {
    if (v === null) return "null";
    if (typeof v !== "object" && typeof v !== "function") return prim(v);
    if (ids.has(v)) return { ref: ids.get(v) };
    const id = ids.size;
    ids.set(v, id);
    const proto = Object.getPrototypeOf(v);
    const out = { id, tag: tagOf(v), proto: names.has(proto) ? names.get(proto) : "(other)", extensible: Object.isExtensible(v) };
    const tag = out.tag;
    if (tag === "[object Date]") out.time = prim(Date.prototype.getTime.call(v));
    if (tag === "[object RegExp]") out.regexp = [v.source, v.flags, v.lastIndex];
    if (tag === "[object Boolean]" || tag === "[object Number]" || tag === "[object String]" || tag === "[object BigInt]") {
      out.primitive = prim(v.valueOf());
    }
    if (tag === "[object Map]") out.entries = [...Map.prototype.entries.call(v)].map(([k, x]) => [d(k), d(x)]);
    if (tag === "[object Set]") out.values = [...Set.prototype.values.call(v)].map(d);
    if (tag === "[object ArrayBuffer]") {
      out.buffer = [v.byteLength, v.resizable, v.maxByteLength, isDetached(v), [...new Uint8Array(v)].join()];
    }
    if (ArrayBuffer.isView(v)) {
      out.view = [d(v.buffer), v.byteOffset, v.byteLength, v.length];
      if (!(v instanceof DataView) && v.length < 50) out.items = Array.from(v, prim);
    }
    const keys = Reflect.ownKeys(v);
    if (tag === "[object Error]") keys.sort();
    out.props = keys.map((k) => {
      const desc = Reflect.getOwnPropertyDescriptor(v, k);
      const flags = `${desc.enumerable ? "e" : "-"}${desc.configurable ? "c" : "-"}${"value" in desc ? (desc.writable ? "w" : "-") : "a"}`;
      let value;
      if (!("value" in desc)) value = "(accessor)";
      else if (k === "stack") value = typeof desc.value === "string" ? "(a stack string)" : prim(desc.value);
      else value = d(desc.value);
      return [String(k), flags, value];
    });
    if (tag === "[object Error]") out.error = [v.name, v.message];
    return out;
  }
  return d(root);
}

// Builds `source` in both realms, clones each with its realm's structuredClone
// and compares the copies. Returns our copy.
function sameAsNode(source, { env = shared, check } = {}) {
  const mine = env.run(`structuredClone(${source})`);
  const theirs = structuredClone(vm.runInThisContext(`(${source})`));
  assert.deepEqual(describe(mine, CTX), describe(theirs, MAIN), source);
  if (check) check(mine);
  return mine;
}

// Both throw a DataCloneError with the same message (node's matches V8's).
function sameErrorAsNode(source, env = shared) {
  let nodeError;
  try { structuredClone(vm.runInThisContext(`(${source})`)); } catch (e) { nodeError = e; }
  assert.ok(nodeError, `node clones ${source}`);
  assert.throws(() => env.run(`structuredClone(${source})`), (e) => {
    assert.ok(e instanceof DOMException, `${source}: ${e}`);
    assert.equal(e.name, nodeError.name);
    assert.equal(e.code, 25);
    assert.equal(e.message, nodeError.message);
    return true;
  });
}

test("the file is one function expression returning structuredClone", () => {
  assert.match(SRC, /^\/\/ /);
  const { ex, run } = load();
  assert.deepEqual(Object.keys(ex), ["structuredClone"]);
  assert.equal(ex.structuredClone.name, "structuredClone");
  assert.equal(ex.structuredClone.length, 1);
  assert.equal(run("typeof structuredClone"), "function");
});

test("primitives", () => {
  for (const src of ["undefined", "null", "true", "false", "0", "-0", "NaN", "Infinity", "-1.5", "2n ** 70n", "-3n",
    "''", "'text'", "'\\ud800 lone surrogate'", "'\\u{1F600}'"]) {
    sameAsNode(src);
  }
  assert.equal(shared.run("structuredClone(undefined)"), undefined);
  assert.ok(Object.is(shared.run("structuredClone(-0)"), -0));
});

test("primitive wrapper objects", () => {
  for (const src of ["new Boolean(false)", "new Number(-0)", "new Number(NaN)", "new String('ab')", "Object(10n)",
    "Object.assign(new String('xy'), { extra: 1 })"]) {
    sameAsNode(src);
  }
  const b = shared.run("structuredClone(Object(7n))");
  assert.equal(typeof b, "object");
  assert.equal(b.valueOf(), 7n);
});

test("Date and RegExp", () => {
  sameAsNode("new Date(0)");
  sameAsNode("new Date(8.64e15)");
  sameAsNode("new Date(NaN)");
  sameAsNode("Object.assign(new Date(5), { extra: 1 })");
  sameAsNode("/a+b/gimsuyd");
  sameAsNode("/[\\p{L}--[a-z]]/v");
  sameAsNode("new RegExp('/', 'g')");
  sameAsNode("new RegExp('\\n')");
  sameAsNode("(() => { const r = /x/g; r.lastIndex = 3; r.extra = 1; return r; })()");
  const r = shared.run("(() => { const r = /x/y; r.lastIndex = 2; return [r, structuredClone(r)]; })()");
  assert.notEqual(r[0], r[1]);
  assert.equal(r[1].lastIndex, 0);
  assert.equal(r[1].sticky, true);
});

test("arrays: holes, length, extra properties, order", () => {
  sameAsNode("[1, , 3]");
  sameAsNode("[, , ,]");
  sameAsNode("(() => { const a = [1, 2]; a.length = 10; return a; })()");
  sameAsNode("(() => { const a = []; a[5] = 'x'; a.foo = 'bar'; a[-1] = 'neg'; a['01'] = 'str'; return a; })()");
  sameAsNode("(() => { const a = []; a[100000] = 1; return a; })()");
  sameAsNode("(() => { const a = [1, 2, 3]; Object.defineProperty(a, 1, { enumerable: false, value: 9 }); return a; })()");
  sameAsNode("[[1, [2, [3]]], {}]");
  const c = shared.run("structuredClone([1, , 3])");
  assert.equal(1 in c, false);
  assert.equal(Array.isArray(c), true);
});

test("plain objects: own enumerable string keys in order, getters run, prototype dropped", () => {
  sameAsNode("({ b: 1, a: 2, 1: 'one', 0: 'zero', [Symbol('s')]: 'dropped' })");
  sameAsNode("JSON.parse('{\"__proto__\": {\"x\": 1}, \"y\": 2}')");
  sameAsNode("Object.create({ inherited: 1 }, { own: { value: 2, enumerable: true }, hidden: { value: 3 } })");
  sameAsNode("Object.assign(Object.create(null), { a: 1 })");
  sameAsNode("({ get g() { return { fresh: true }; }, set s(v) {} })");
  sameAsNode("Object.freeze({ frozen: [1] })");
  sameAsNode("(() => { class Point { #secret = 1; constructor() { this.x = 1; this.y = 2; } get len() { return 3; } } return new Point(); })()");
  sameAsNode("(() => { class A { constructor() { this.a = 1; } } class B extends A { constructor() { super(); this.b = 2; } } return [new B(), new A()]; })()");
  const c = shared.run("structuredClone(JSON.parse('{\"__proto__\": 1}'))");
  assert.equal(Object.getPrototypeOf(c), shared.run("Object.prototype"));
  assert.equal(Object.getOwnPropertyDescriptor(c, "__proto__").value, 1);
});

test("getters run once, depth first, in serialization order", () => {
  const scenario = `(() => {
    const log = [];
    const v = {
      get a() { log.push("a"); return { get inner() { log.push("a.inner"); return 1; } }; },
      get b() { log.push("b"); delete this.c; this.late = 1; return [{ get deep() { log.push("b.deep"); return 2; } }]; },
      c: "deleted by b",
      get d() { log.push("d"); return new Map([[{ get k() { log.push("key"); return 0; } }, { get v() { log.push("value"); return 0; } }]]); },
    };
    const copy = structuredClone(v);
    return { log, copy };
  })()`;
  const mine = shared.run(scenario);
  const theirs = vm.runInThisContext(scenario);
  assert.deepEqual([...mine.log], theirs.log);
  assert.deepEqual(describe(mine.copy, CTX), describe(theirs.copy, MAIN));
  assert.deepEqual([...mine.log], ["a", "a.inner", "b", "b.deep", "d", "key", "value"]);
  assert.equal("c" in mine.copy, false);
  assert.equal("late" in mine.copy, false);
});

test("Map and Set contents are taken when the walk reaches them", () => {
  const scenario = `(() => {
    const m = new Map([["a", 1]]);
    const s = new Set([1]);
    const v = [{ get x() { m.set("b", 2); s.add(2); return 0; } }, m, s];
    return structuredClone(v);
  })()`;
  assert.deepEqual(describe(shared.run(scenario), CTX), describe(vm.runInThisContext(scenario), MAIN));
  const scenario2 = `(() => {
    const m = new Map([["a", { get x() { m.set("late", 1); m.delete("b"); return 1; } }], ["b", 2]]);
    return structuredClone(m);
  })()`;
  assert.deepEqual(describe(shared.run(scenario2), CTX), describe(vm.runInThisContext(scenario2), MAIN));
});

test("getter errors propagate unchanged", () => {
  assert.throws(() => shared.run("structuredClone({ get a() { throw new RangeError('boom'); } })"),
    { name: "RangeError", message: "boom" });
  assert.throws(() => shared.run("structuredClone([{ get a() { throw 'plain'; } }])"), (e) => e === "plain");
});

test("Map and Set", () => {
  sameAsNode("new Map([[1, 'a'], ['1', 'b'], [{ k: 1 }, [2]], [NaN, -0], [null, undefined]])");
  sameAsNode("new Set([1, '1', { a: 1 }, [2], NaN, 0])");
  sameAsNode("Object.assign(new Map([[1, 2]]), { extra: 1 })");
  sameAsNode("(() => { class M extends Map {} return new M([[1, 2]]); })()");
  sameAsNode("(() => { const k = {}; return new Map([[k, k], [1, k]]); })()");
  sameAsNode("(() => { const s = new Set(); s.add(s); return s; })()");
});

test("ArrayBuffer, resizable buffers, typed arrays, DataView", () => {
  sameAsNode("new ArrayBuffer(0)");
  sameAsNode("new Uint8Array([1, 2, 3, 255]).buffer");
  sameAsNode("(() => { const b = new ArrayBuffer(4, { maxByteLength: 16 }); new Uint8Array(b).set([9, 8, 7, 6]); return b; })()");
  for (const T of ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array",
    "Uint32Array", "Float32Array", "Float64Array"]) {
    sameAsNode(`new ${T}([1, -2, 3.5, 300])`);
    sameAsNode(`new ${T}(new ArrayBuffer(32), 8, 2)`);
  }
  sameAsNode("new BigInt64Array([-1n, 2n ** 62n])");
  sameAsNode("new BigUint64Array([1n, 2n ** 63n])");
  sameAsNode("new Float64Array([NaN, -0, Infinity])");
  sameAsNode("Object.assign(new Uint8Array(2), { extra: 1 })");
  sameAsNode("new DataView(new Uint8Array([1, 2, 3, 4, 5]).buffer, 1, 3)");
  sameAsNode("new DataView(new ArrayBuffer(8))");
  // Views that share a buffer keep sharing one (and it is the buffer in the value).
  sameAsNode("(() => { const b = new ArrayBuffer(8); return [new Uint8Array(b), new Uint16Array(b, 2, 1), new DataView(b, 4), b]; })()");
  const c = shared.run("(() => { const b = new ArrayBuffer(8); const v = [new Uint8Array(b), new DataView(b), b]; return structuredClone(v); })()");
  assert.equal(c[0].buffer, c[1].buffer);
  assert.equal(c[0].buffer, c[2]);
});


test("length-tracking views stay length-tracking; fixed ones stay fixed", () => {
  const scenario = `(() => {
    const b = new ArrayBuffer(8, { maxByteLength: 32 });
    const tracking = new Uint16Array(b, 2);
    const fixed = new Uint16Array(b, 2, 2);
    const dvTracking = new DataView(b, 1);
    const dvFixed = new DataView(b, 1, 3);
    new Uint8Array(b).set([1, 2, 3, 4, 5, 6, 7, 8]);
    const c = structuredClone({ b, tracking, fixed, dvTracking, dvFixed });
    const before = [b.byteLength, [...new Uint8Array(b)].join()];
    c.b.resize(16);
    return [before, c.tracking.length, c.fixed.length, c.dvTracking.byteLength, c.dvFixed.byteLength, [...new Uint8Array(c.b)].join()];
  })()`;
  const mine = shared.run(scenario);
  const theirs = vm.runInThisContext(scenario);
  assert.deepEqual(JSON.parse(JSON.stringify(mine)), theirs);
  assert.deepEqual(theirs.slice(1, 5), [7, 2, 15, 3]);
  // A buffer already at its maximum length (the probe shrinks it, then puts it back).
  const atMax = `(() => {
    const b = new ArrayBuffer(8, { maxByteLength: 8 });
    new Uint8Array(b).set([1, 2, 3, 4, 5, 6, 7, 8]);
    const c = structuredClone([new Uint16Array(b), new Uint16Array(b, 0, 4), new Uint8Array(b, 4), b]);
    return [[...new Uint8Array(b)].join(), b.byteLength, c[0].length, c[1].length, c[2].length];
  })()`;
  assert.deepEqual(JSON.parse(JSON.stringify(shared.run(atMax))), ["1,2,3,4,5,6,7,8", 8, 4, 4, 4]);
});

test("Error objects", () => {
  for (const src of ["new Error('m')", "new EvalError('m')", "new RangeError('m')", "new ReferenceError('m')",
    "new SyntaxError('m')", "new TypeError('m')", "new URIError('m')", "new Error()", "new Error('')"]) {
    sameAsNode(src);
  }
  // Names outside the list become Error; a changed name picks the constructor.
  sameAsNode("(() => { class MyError extends Error { constructor() { super('mine'); this.name = 'MyError'; this.extra = 1; } } return new MyError(); })()");
  sameAsNode("(() => { const e = new Error('x'); e.name = 'TypeError'; return e; })()");
  sameAsNode("(() => { const e = new TypeError('x'); e.name = 'Nope'; return e; })()");
  sameAsNode("new AggregateError([1], 'agg')");
  // Message: own data property only, converted to a string.
  sameAsNode("(() => { const e = new Error(); e.message = 42; return e; })()");
  sameAsNode("(() => { const e = new Error(); Object.defineProperty(e, 'message', { get() { return 'g'; } }); return e; })()");
  sameAsNode("Object.setPrototypeOf(new Error('inherited message gone'), Object.create(Error.prototype, { message: { value: 'p' } }))");
  // Cause: own data property, cloned like any value.
  sameAsNode("new Error('m', { cause: { a: [1] } })");
  sameAsNode("new Error('m', { cause: undefined })");
  sameAsNode("(() => { const e = new Error('m'); Object.defineProperty(e, 'cause', { get() { return 1; } }); return e; })()");
  sameAsNode("[new RangeError('a', { cause: 1 }), new Error('b')]");
  // Stack: kept when it is a string.
  const e = shared.run("(() => { const e = new Error('s'); return [e, structuredClone(e)]; })()");
  assert.equal(e[1].stack, e[0].stack);
  assert.equal(Object.getOwnPropertyDescriptor(e[1], "stack").enumerable, false);
  sameAsNode("(() => { const e = new Error('m'); e.stack = 5; return e; })()");
  // Objects that only inherit from Error.prototype are plain objects.
  sameAsNode("Object.create(Error.prototype)");
  // An error that causes itself (node's deserializer fails here; the value is fine).
  const cyc = shared.run("(() => { const e = new Error('m'); e.cause = e; return structuredClone(e); })()");
  assert.equal(cyc.cause, cyc);
  assert.equal(Object.getOwnPropertyDescriptor(cyc, "cause").enumerable, false);
  const deepCause = shared.run("(() => { const e = new Error('outer', { cause: new TypeError('inner', { cause: [1] }) }); return structuredClone(e); })()");
  assert.equal(deepCause.cause.name, "TypeError");
  assert.equal(deepCause.cause.cause[0], 1);
  assert.ok(deepCause.cause instanceof shared.run("TypeError"));
});

test("DOMException keeps its name and message (a serializable platform object)", () => {
  const c = shared.run("(() => { const e = new DOMException('gone', 'AbortError'); return [e, structuredClone(e)]; })()");
  assert.notEqual(c[1], c[0]);
  assert.ok(c[1] instanceof DOMException);
  assert.equal(c[1].name, "AbortError");
  assert.equal(c[1].message, "gone");
  assert.equal(c[1].code, 20);
  assert.equal(c[1].stack, c[0].stack);
  const plain = shared.run("structuredClone(new DOMException())");
  assert.equal(plain.name, "Error");
  assert.equal(plain.message, "");
  // A plain object inheriting from DOMException.prototype is no DOMException.
  const fake = shared.run("structuredClone(Object.create(DOMException.prototype, { x: { value: 1, enumerable: true } }))");
  assert.equal(fake instanceof DOMException, false);
  assert.equal(fake.x, 1);
});

test("cycles and shared references", () => {
  sameAsNode("(() => { const o = { name: 'o' }; o.self = o; o.list = [o, { back: o }]; return o; })()");
  sameAsNode("(() => { const shared = { s: 1 }; return { a: shared, b: shared, c: [shared, shared] }; })()");
  sameAsNode("(() => { const a = []; a.push(a, a); return a; })()");
  sameAsNode("(() => { const m = new Map(); m.set(m, m); const s = new Set([m]); return { m, s, again: m }; })()");
  const c = shared.run("(() => { const o = {}; o.o = o; const v = { a: o, b: [o] }; return structuredClone(v); })()");
  assert.equal(c.a, c.b[0]);
  assert.equal(c.a.o, c.a);
});

test("uncloneable values throw DataCloneError with V8's messages", () => {
  for (const src of [
    "function foo() {}",
    "() => 1",
    "class A {}",
    "async function af() {}",
    "function* g() {}",
    "Math.max",
    "Symbol('x')",
    "Symbol()",
    "Symbol.iterator",
    "Object(Symbol('x'))",
    "Promise.resolve(1)",
    "(() => { class P extends Promise {} return P.resolve(); })()",
    "new WeakMap()",
    "new WeakSet()",
    "new WeakRef({})",
    "new FinalizationRegistry(() => {})",
    "(function* () {})()",
    "new Map().keys()",
    "new Set().entries()",
    "[].values()",
    "'abc'[Symbol.iterator]()",
    "/a/g[Symbol.matchAll]('a')",
    "(function () { return arguments; })(1, 2)",
    "(function () { 'use strict'; return arguments; })(1, 2)",
    "{ a: [1, { f() {} }] }",
    "new Map([[1, Symbol('in a map')]])",
    "new Set([() => 2])",
    "new Error('m', { cause: Symbol('cause') })",
  ]) {
    sameErrorAsNode(src);
  }
});

test("values node clones that this sandbox does not", () => {
  // Async generators (node: "#<Object>"? it varies) and shared memory.
  assert.throws(() => shared.run("structuredClone((async function* () {})())"),
    { name: "DataCloneError", message: "[object AsyncGenerator] could not be cloned." });
  // SharedArrayBuffer: there is no agent to share with, so it is refused (as
  // in browsers that are not cross-origin isolated).
  assert.throws(() => shared.run("structuredClone(new SharedArrayBuffer(8))"),
    { name: "DataCloneError", message: "#<SharedArrayBuffer> could not be cloned." });
  assert.throws(() => shared.run("structuredClone(new Uint8Array(new SharedArrayBuffer(8)))"),
    { name: "DataCloneError", message: "#<SharedArrayBuffer> could not be cloned." });
  // An object that merely inherits from Promise.prototype is refused too (no
  // side-effect-free brand check exists for promises).
  assert.throws(() => shared.run("structuredClone(Object.create(Promise.prototype))"), { name: "DataCloneError" });
  // Objects inheriting from WeakMap.prototype etc. without being one are plain.
  assert.deepEqual(Object.keys(shared.run("structuredClone(Object.assign(Object.create(WeakMap.prototype), { a: 1 }))")), ["a"]);
});

test("platform objects from the events group are refused", () => {
  const env = load({ events: true });
  for (const [src, name] of [["new EventTarget()", "EventTarget"], ["new Event('x')", "Event"],
    ["new CustomEvent('x', { detail: 1 })", "CustomEvent"], ["new AbortController()", "AbortController"],
    ["new AbortController().signal", "AbortSignal"], ["AbortSignal.abort()", "AbortSignal"],
    ["(() => { class Emitter extends EventTarget {} return new Emitter(); })()", "Emitter"],
    ["{ nested: [new Event('y')] }", "Event"]]) {
    assert.throws(() => env.run(`structuredClone(${src})`),
      (e) => e instanceof DOMException && e.name === "DataCloneError" && e.message === `#<${name}> could not be cloned.`, src);
  }
  // The events group is consulted only for objects that are not plain.
  const env2 = load({ events: true });
  env2.run("structuredClone({ a: [1, { b: 2 }], m: new Map(), d: new Date() })");
  assert.deepEqual(env2.loads, []);
  env2.run("structuredClone(new (class Foo { constructor() { this.x = 1; } })())");
  assert.deepEqual(env2.loads, ["events"]);
  env2.run("structuredClone([new (class Bar {})(), new (class Baz {})()])");
  assert.deepEqual(env2.loads, ["events"]);
  // Without an events group, class instances still clone.
  const env3 = load();
  assert.deepEqual(env3.run("JSON.stringify(structuredClone(new (class Foo { constructor() { this.x = 1; } })()))"), '{"x":1}');
});

test("deep nesting does not use the native stack", () => {
  const check = (src, walk, depth = 100000) => {
    const c = shared.run(`(() => { let v = ${src.init}; for (let i = 0; i < ${depth}; i++) v = ${src.wrap}; return structuredClone(v); })()`);
    let n = 0;
    for (let x = c; (x = walk(x)) !== undefined;) n++;
    assert.equal(n, depth, src.wrap);
  };
  check({ init: "[]", wrap: "[v]" }, (x) => x[0]);
  check({ init: "{}", wrap: "{ v }" }, (x) => x.v);
  check({ init: "new Map()", wrap: "new Map([[v, 1]])" }, (x) => x.keys().next().value);
  check({ init: "new Set()", wrap: "new Set([v])" }, (x) => x.values().next().value);
  // (V8 makes every error's stack: fewer of those keep the test quick.)
  check({ init: "new Error('end')", wrap: "new Error('e', { cause: v })" }, (x) => x.cause, 20000);
  // And a wide one.
  const wide = shared.run("structuredClone(Array.from({ length: 100000 }, (_, i) => ({ i })))");
  assert.equal(wide.length, 100000);
  assert.equal(wide[99999].i, 99999);
});

test("transfer detaches the original and moves its bytes", () => {
  const r = shared.run(`(() => {
    const b = new ArrayBuffer(8);
    new Uint8Array(b).set([1, 2, 3, 4, 5, 6, 7, 8]);
    const view = new Uint8Array(b, 2, 4);
    const c = structuredClone({ b, view }, { transfer: [b] });
    return { detached: isDetached(b), length: b.byteLength, viewLength: view.length,
      bytes: [...new Uint8Array(c.b)].join(), same: c.view.buffer === c.b, viewBytes: [...c.view].join() };
  })()`);
  assert.deepEqual({ ...r }, { detached: true, length: 0, viewLength: 0, bytes: "1,2,3,4,5,6,7,8", same: true, viewBytes: "3,4,5,6" });
  const node = (() => {
    const b = new ArrayBuffer(8);
    new Uint8Array(b).set([1, 2, 3, 4, 5, 6, 7, 8]);
    const view = new Uint8Array(b, 2, 4);
    const c = structuredClone({ b, view }, { transfer: [b] });
    return { detached: isDetached(b), length: b.byteLength, viewLength: view.length,
      bytes: [...new Uint8Array(c.b)].join(), same: c.view.buffer === c.b, viewBytes: [...c.view].join() };
  })();
  assert.deepEqual({ ...r }, node);
});

test("transfer: the value itself, resizable buffers, buffers not in the value", () => {
  const r = shared.run(`(() => {
    const b = new ArrayBuffer(4, { maxByteLength: 12 });
    new Uint8Array(b).set([4, 3, 2, 1]);
    const c = structuredClone(b, { transfer: [b] });
    const other = new ArrayBuffer(2);
    const d = structuredClone({ x: 1 }, { transfer: new Set([other]) });
    const t = new Uint8Array([7, 7]);
    const e = structuredClone(t, { transfer: [t.buffer] });
    return [isDetached(b), c.byteLength, c.resizable, c.maxByteLength, [...new Uint8Array(c)].join(),
      isDetached(other), d.x, isDetached(t.buffer), t.length, [...e].join(), e.buffer.byteLength];
  })()`);
  assert.deepEqual([...r], [true, 4, true, 12, "4,3,2,1", true, 1, true, 0, "7,7", 2]);
  // structuredClone(typedArray, { transfer: [its buffer] }) agrees with node.
  const t = new Uint8Array([7, 7]);
  const e = structuredClone(t, { transfer: [t.buffer] });
  assert.deepEqual([isDetached(t.buffer), t.length, [...e].join(), e.buffer.byteLength], [true, 0, "7,7", 2]);
});

test("transfer list errors", () => {
  const dce = (message) => (e) => e instanceof DOMException && e.name === "DataCloneError" && message.test(e.message);
  assert.throws(() => shared.run("(() => { const b = new ArrayBuffer(1); structuredClone(1, { transfer: [b, b] }); })()"),
    dce(/^ArrayBuffer at index 1 is a duplicate of an earlier ArrayBuffer/));
  assert.throws(() => shared.run("structuredClone(1, { transfer: [{}] })"), dce(/^Value at index 0 does not have a transferable type\.$/));
  assert.throws(() => shared.run("structuredClone(1, { transfer: [new ArrayBuffer(1), new Uint8Array(1)] })"),
    dce(/^Value at index 1 does not have a transferable type\.$/));
  assert.throws(() => shared.run("structuredClone(1, { transfer: [new SharedArrayBuffer(1)] })"), dce(/does not have a transferable type/));
  assert.throws(() => shared.run("(() => { const b = new ArrayBuffer(1); b.transfer(); /* detaches b */ structuredClone(1, { transfer: [b] }); })()"),
    dce(/^ArrayBuffer at index 0 is already detached\.$/));
  assert.throws(() => shared.run("(() => { const b = new ArrayBuffer(1); b.transfer(); /* detaches b */ structuredClone(b); })()"),
    dce(/^An ArrayBuffer is detached and could not be cloned\.$/));
  // Web IDL conversion errors are TypeErrors.
  for (const opts of ["{ transfer: 5 }", "{ transfer: {} }", "{ transfer: [1] }", "{ transfer: [null] }", "5", "'str'", "true"]) {
    assert.throws(() => shared.run(`structuredClone(1, ${opts})`), { name: "TypeError" }, opts);
  }
  for (const opts of ["undefined", "null", "{}", "{ transfer: undefined }", "{ transfer: [] }", "() => {}"]) {
    assert.equal(shared.run(`structuredClone(1, ${opts})`), 1, opts);
  }
  assert.throws(() => shared.run("structuredClone()"), { name: "TypeError", message: /1 argument required/ });
});

test("a failed clone detaches nothing", () => {
  const r = shared.run(`(() => {
    const b = new ArrayBuffer(4);
    let err;
    try { structuredClone({ b, f() {} }, { transfer: [b] }); } catch (e) { err = e; }
    return [err.name, isDetached(b), b.byteLength];
  })()`);
  assert.deepEqual([...r], ["DataCloneError", false, 4]);
  // A getter detaching a listed buffer during the walk makes the clone fail.
  const r2 = shared.run(`(() => {
    const b = new ArrayBuffer(4);
    let err;
    try { structuredClone({ get x() { b.transfer(); /* detaches b */ return 1; } }, { transfer: [b] }); } catch (e) { err = e; }
    return [err.name, err.message];
  })()`);
  assert.deepEqual([...r2], ["DataCloneError", "ArrayBuffer at index 0 is already detached."]);
});

test("transfer without ArrayBuffer.prototype.transfer is refused", () => {
  const env = load({ prelude: "delete ArrayBuffer.prototype.transfer;" });
  assert.throws(() => env.run("structuredClone(1, { transfer: [new ArrayBuffer(1)] })"),
    (e) => e instanceof DOMException && e.name === "DataCloneError" && /not supported/.test(e.message));
  assert.equal(env.run("structuredClone([1])[0]"), 1);
  assert.equal(env.run("structuredClone(1, { transfer: [] })"), 1);
});

test("the copy does not depend on built-ins a script changed after loading", () => {
  const env = load();
  env.run(`globalThis.input = { a: [1, 2], m: new Map([[1, { a: 1 }]]), s: new Set([1]), b: new Uint8Array([5, 6]).buffer,
    d: new Date(1000), r: /x/i };`);
  env.run(`
    Object.defineProperty(Object.prototype, "a", { set() { throw new Error("setter hijacked"); }, configurable: true });
    Object.defineProperty(Array.prototype, "0", { set() { throw new Error("index setter hijacked"); }, configurable: true });
    Map.prototype.set = Set.prototype.add = function () { throw new Error("collection hijacked"); };
    Map.prototype.entries = Map.prototype[Symbol.iterator] = function () { throw new Error("iterator hijacked"); };
    Array.prototype.push = function () { throw new Error("push hijacked"); };
    Uint8Array.prototype.set = function () { throw new Error("set hijacked"); };
    Object.defineProperty(ArrayBuffer.prototype, "byteLength", { get() { return 1; } });
    Date.prototype.getTime = function () { return 1; };
    Object.defineProperty(RegExp.prototype, "flags", { get() { return "g"; } });
    Reflect.defineProperty = Object.defineProperty = function () { throw new Error("define hijacked"); };
  `);
  const c = env.run("structuredClone(input)");
  const ownA = Object.getOwnPropertyDescriptor(c, "a").value;
  assert.equal(Object.getOwnPropertyDescriptor(ownA, "0").value, 1);
  assert.equal(env.run("Map.prototype.get").call(c.m, 1).a, 1);
  assert.equal(Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength").get.call(c.b), 2);
  assert.equal(env.run("Date.prototype.valueOf").call(c.d), 1000);
  assert.equal(Object.getOwnPropertyDescriptor(env.run("RegExp.prototype"), "source").get.call(c.r), "x");
  assert.equal(Object.getOwnPropertyDescriptor(env.run("RegExp.prototype"), "ignoreCase").get.call(c.r), true);
});
