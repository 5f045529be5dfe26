// Tests for src/platform/events.js (the "events" group): Event, CustomEvent,
// EventTarget, AbortController, AbortSignal. The file is evaluated as a strict
// script in a fresh vm context holding only what the sandbox provides, and its
// behaviour is compared with node's own implementations where node follows
// the DOM standard (and checked against the standard where it does not).
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import vm from "node:vm";

const SRC = fs.readFileSync(new URL("../../src/platform/events.js", import.meta.url), "utf8");
const NAMES = ["Event", "EventTarget", "CustomEvent", "AbortController", "AbortSignal"];

// A sandbox-like realm with the group loaded and installed the way the
// sandbox installs groups (writable, configurable, non-enumerable; "__"
// names are only returned, never installed).
function load({ timer = setTimeout } = {}) {
  const errors = [];
  const ctx = vm.createContext({
    DOMException,
    setTimeout: timer,
    clearTimeout,
    queueMicrotask,
    performance,
    console: { error: (...args) => errors.push(args), log: (...args) => console.log(...args) },
  });
  vm.runInContext(NAMES.map((n) => `delete globalThis.${n};`).join("") + "delete globalThis.structuredClone;", ctx);
  const factory = vm.runInContext(SRC, ctx, { filename: "events.js" });
  assert.equal(typeof factory, "function");
  const ex = factory({}, (group) => { throw new Error(`unexpected load(${group})`); });
  for (const k of Object.keys(ex)) {
    if (k.startsWith("__")) continue;
    Object.defineProperty(ctx, k, { value: ex[k], writable: true, configurable: true, enumerable: false });
  }
  return { ctx, ex, errors, run: (code) => vm.runInContext(code, ctx) };
}

const native = { Event, EventTarget, CustomEvent, AbortController, AbortSignal };

// Runs `scenario` with node's classes and with ours; both logs must agree.
function sameAsNode(scenario) {
  const { ex } = load();
  const expected = scenario(native);
  const actual = scenario(ex);
  assert.deepEqual(actual, expected);
  return actual;
}

test("the file is one function expression that a strict script completes with", () => {
  assert.match(SRC, /^\/\/ /);
  const ctx = vm.createContext({ DOMException, setTimeout, console, performance });
  const f = vm.runInContext('"use strict";\n' + SRC, ctx);
  assert.equal(typeof f, "function");
  const ex = f({}, () => null);
  assert.deepEqual(Object.keys(ex).sort(),
    ["AbortController", "AbortSignal", "CustomEvent", "Event", "EventTarget",
      "__addAbortAlgorithm", "__isAbortSignal", "__platformBrand"]);
  // Each call makes a fresh set of classes.
  assert.notEqual(f({}, () => null).Event, ex.Event);
});

test("interface shape: tags, lengths, constants, enumerable members", () => {
  const { ex, run } = load();
  const tag = (v) => Object.prototype.toString.call(v);
  assert.equal(run("String(new Event('x'))"), "[object Event]");
  assert.equal(run("String(new CustomEvent('x'))"), "[object CustomEvent]");
  assert.equal(run("String(new EventTarget())"), "[object EventTarget]");
  assert.equal(run("String(new AbortController())"), "[object AbortController]");
  assert.equal(run("String(new AbortController().signal)"), "[object AbortSignal]");
  assert.equal(tag(ex.Event.prototype), "[object Event]");
  const lengths = (C) => [C.Event.length, C.CustomEvent.length, C.EventTarget.length, C.AbortController.length,
    C.AbortSignal.length, C.AbortSignal.any.length, C.AbortSignal.timeout.length, C.AbortSignal.abort.length,
    C.EventTarget.prototype.addEventListener.length, C.EventTarget.prototype.removeEventListener.length,
    C.EventTarget.prototype.dispatchEvent.length, C.AbortController.prototype.abort.length];
  assert.deepEqual(lengths(ex), lengths(native));
  for (const [i, name] of ["NONE", "CAPTURING_PHASE", "AT_TARGET", "BUBBLING_PHASE"].entries()) {
    for (const o of [ex.Event, ex.Event.prototype]) {
      assert.deepEqual(Object.getOwnPropertyDescriptor(o, name), { value: i, writable: false, enumerable: true, configurable: false });
    }
  }
  assert.deepEqual(Object.keys(ex.EventTarget.prototype), ["addEventListener", "removeEventListener", "dispatchEvent"]);
  assert.deepEqual(Object.keys(ex.AbortController.prototype).sort(), ["abort", "signal"]);
  assert.deepEqual(Object.keys(ex.AbortSignal.prototype).sort(), ["aborted", "onabort", "reason", "throwIfAborted"]);
  assert.deepEqual(Object.keys(ex.AbortSignal).sort(), ["abort", "any", "timeout"]);
  assert.deepEqual(Object.keys(ex.CustomEvent.prototype).sort(), ["detail", "initCustomEvent"]);
  const nodeEventKeys = Object.keys(Event.prototype).filter((k) => k !== "isTrusted");
  for (const k of nodeEventKeys) assert.ok(Object.keys(ex.Event.prototype).includes(k), k);
  assert.equal(Object.getPrototypeOf(ex.AbortSignal), ex.EventTarget);
  assert.equal(Object.getPrototypeOf(ex.CustomEvent.prototype), ex.Event.prototype);
  const d = Object.getOwnPropertyDescriptor(ex.Event.prototype, "type");
  assert.equal(typeof d.get, "function");
  assert.equal(d.get.name, "get type");
});

test("Event construction and attributes", () => {
  const { ctx, run } = load();
  const e = run("new Event('x')");
  const plain = (ev) => ({
    type: ev.type, bubbles: ev.bubbles, cancelable: ev.cancelable, composed: ev.composed,
    defaultPrevented: ev.defaultPrevented, eventPhase: ev.eventPhase, target: ev.target,
    currentTarget: ev.currentTarget, srcElement: ev.srcElement, isTrusted: ev.isTrusted,
    returnValue: ev.returnValue, cancelBubble: ev.cancelBubble, path: ev.composedPath().length,
  });
  assert.deepEqual(plain(e), plain(new Event("x")));
  const init = { bubbles: 1, cancelable: "yes", composed: {} };
  assert.deepEqual(plain(new ctx.Event("y", init)), plain(new Event("y", init)));
  assert.equal(new ctx.Event(5).type, "5");
  assert.equal(new ctx.Event(null).type, "null");
  assert.equal(new ctx.Event({ toString: () => "obj" }).type, "obj");
  assert.throws(() => new ctx.Event(), { name: "TypeError", message: /1 argument required, but only 0 present/ });
  assert.throws(() => new ctx.Event(Symbol("s")), { name: "TypeError" });
  assert.throws(() => new ctx.Event("x", 5), { name: "TypeError" });
  assert.throws(() => ctx.Event("x"), { name: "TypeError" });
  assert.doesNotThrow(() => new ctx.Event("x", null));
  // Members are read in lexicographic order.
  const order = [];
  new ctx.Event("x", new Proxy({}, { get(_, k) { order.push(k); return undefined; } }));
  assert.deepEqual(order, ["bubbles", "cancelable", "composed"]);
  // isTrusted is an own unforgeable accessor.
  const desc = Object.getOwnPropertyDescriptor(e, "isTrusted");
  assert.equal(typeof desc.get, "function");
  assert.equal(desc.configurable, false);
  assert.equal(desc.enumerable, true);
  assert.equal(Object.getOwnPropertyDescriptor(new ctx.Event("z"), "isTrusted").get, desc.get);
  // timeStamp comes from performance.now().
  const before = performance.now();
  const t = new ctx.Event("x").timeStamp;
  assert.ok(typeof t === "number" && t >= before && t <= performance.now());
});

test("brand checks throw Illegal invocation", () => {
  const { ex } = load();
  const getter = (C, name) => Object.getOwnPropertyDescriptor(C.prototype, name).get;
  const illegal = { name: "TypeError", message: "Illegal invocation" };
  assert.throws(() => getter(ex.AbortSignal, "aborted").call({}), illegal);
  assert.throws(() => getter(ex.AbortSignal, "reason").call(new ex.EventTarget()), illegal);
  assert.throws(() => getter(ex.AbortSignal, "onabort").call(new ex.EventTarget()), illegal);
  assert.throws(() => getter(ex.Event, "type").call({}), illegal);
  assert.throws(() => getter(ex.Event, "type").call(undefined), illegal);
  assert.throws(() => getter(ex.CustomEvent, "detail").call(new ex.Event("x")), illegal);
  assert.throws(() => getter(ex.AbortController, "signal").call({}), illegal);
  assert.throws(() => ex.EventTarget.prototype.addEventListener.call({}, "x", () => {}), illegal);
  assert.throws(() => ex.EventTarget.prototype.dispatchEvent.call(new EventTarget(), new ex.Event("x")), illegal);
  assert.throws(() => ex.Event.prototype.preventDefault.call(new Event("x")), illegal);
  assert.throws(() => ex.AbortSignal.prototype.throwIfAborted.call({}), illegal);
  assert.throws(() => ex.AbortController.prototype.abort.call({}), illegal);
  assert.throws(() => new ex.AbortSignal(), { name: "TypeError", message: "Illegal constructor" });
  class Sub extends ex.AbortSignal {}
  assert.throws(() => new Sub(), { name: "TypeError", message: "Illegal constructor" });
  // Objects that merely inherit from the prototypes are not branded.
  assert.throws(() => Object.create(ex.AbortSignal.prototype).aborted, illegal);
  assert.equal(ex.__isAbortSignal(Object.create(ex.AbortSignal.prototype)), false);
});

test("listeners run in registration order; capture listeners first at the target", () => {
  const { ex } = load();
  const et = new ex.EventTarget();
  const log = [];
  et.addEventListener("x", () => log.push("bubble1"));
  et.addEventListener("x", () => log.push("capture1"), true);
  et.addEventListener("x", () => log.push("bubble2"), { capture: false });
  et.addEventListener("x", () => log.push("capture2"), { capture: true });
  et.addEventListener("y", () => log.push("other type"));
  et.dispatchEvent(new ex.Event("x"));
  // DOM standard (and browsers): the capturing pass runs before the bubbling
  // pass even at the target. (Node runs them in registration order.)
  assert.deepEqual(log, ["capture1", "capture2", "bubble1", "bubble2"]);
});

test("dispatch state seen by listeners, and after dispatch", () => {
  sameAsNode(({ Event, EventTarget }) => {
    const et = new EventTarget();
    const log = [];
    const e = new Event("go", { bubbles: true, cancelable: true });
    et.addEventListener("go", function (ev) {
      log.push(this === et, ev === e, ev.target === et, ev.currentTarget === et, ev.eventPhase,
        ev.composedPath().length, ev.composedPath()[0] === et, ev.srcElement === et);
    });
    const ret = et.dispatchEvent(e);
    log.push(ret, e.target === et, e.currentTarget, e.eventPhase, e.composedPath().length, e.isTrusted);
    return log;
  });
});

test("handleEvent objects, looked up at dispatch time, called with the object as this", () => {
  const log = sameAsNode(({ Event, EventTarget }) => {
    const et = new EventTarget();
    const log = [];
    const listener = { handleEvent(e) { log.push("first", this === listener, e.type); } };
    et.addEventListener("x", listener);
    et.dispatchEvent(new Event("x"));
    listener.handleEvent = function () { log.push("second", this === listener); };
    et.dispatchEvent(new Event("x"));
    et.removeEventListener("x", listener);
    et.dispatchEvent(new Event("x"));
    return log;
  });
  assert.deepEqual(log, ["first", true, "x", "second", true]);
});

test("duplicates are ignored; capture distinguishes listeners", () => {
  const log = sameAsNode(({ Event, EventTarget }) => {
    const et = new EventTarget();
    const log = [];
    const f = (e) => log.push("f" + e.type);
    et.addEventListener("x", f);
    et.addEventListener("x", f);
    et.addEventListener("x", f, { once: true });
    et.addEventListener("x", f, false);
    et.addEventListener("x", f, true);
    et.addEventListener("x", f, { capture: true, passive: true });
    et.dispatchEvent(new Event("x"));
    log.push("|");
    et.removeEventListener("x", f, true);
    et.dispatchEvent(new Event("x"));
    log.push("|");
    et.removeEventListener("x", f, { capture: true });
    et.removeEventListener("x", f, {});
    et.dispatchEvent(new Event("x"));
    return log;
  });
  assert.deepEqual(log, ["fx", "fx", "|", "fx", "|"]);
});

test("removeEventListener with a boolean or capture option matches only that listener", () => {
  const { ex } = load();
  const et = new ex.EventTarget();
  const log = [];
  const f = () => log.push("f");
  et.addEventListener("x", f, true);
  et.removeEventListener("x", f);
  et.dispatchEvent(new ex.Event("x"));
  et.removeEventListener("x", f, { capture: 1 });
  et.dispatchEvent(new ex.Event("x"));
  assert.deepEqual(log, ["f"]);
});

test("once listeners run once, even when dispatch re-enters", () => {
  const log = sameAsNode(({ Event, EventTarget }) => {
    const et = new EventTarget();
    const log = [];
    et.addEventListener("x", () => {
      log.push("once");
      et.dispatchEvent(new Event("x"));
    }, { once: true });
    et.addEventListener("x", () => log.push("always"));
    et.dispatchEvent(new Event("x"));
    et.dispatchEvent(new Event("x"));
    return log;
  });
  assert.deepEqual(log, ["once", "always", "always", "always"]);
});

test("passive listeners cannot cancel; others can if the event is cancelable", () => {
  const { ex } = load();
  const et = new ex.EventTarget();
  const seen = [];
  et.addEventListener("p", (e) => { e.preventDefault(); seen.push(e.defaultPrevented); }, { passive: true });
  assert.equal(et.dispatchEvent(new ex.Event("p", { cancelable: true })), true);
  et.addEventListener("p", (e) => { e.preventDefault(); seen.push(e.defaultPrevented); });
  assert.equal(et.dispatchEvent(new ex.Event("p", { cancelable: true })), false);
  assert.equal(et.dispatchEvent(new ex.Event("p")), true);
  assert.deepEqual(seen, [false, false, true, false, false]);
  // returnValue = false inside a passive listener is ignored as well.
  const et2 = new ex.EventTarget();
  et2.addEventListener("q", (e) => { e.returnValue = false; }, { passive: true });
  assert.equal(et2.dispatchEvent(new ex.Event("q", { cancelable: true })), true);
  // passive: undefined means the default (false).
  const et3 = new ex.EventTarget();
  et3.addEventListener("r", (e) => e.preventDefault(), { passive: undefined });
  assert.equal(et3.dispatchEvent(new ex.Event("r", { cancelable: true })), false);
});

test("non-passive cancellation agrees with node", () => {
  sameAsNode(({ Event, EventTarget }) => {
    const et = new EventTarget();
    const log = [];
    et.addEventListener("c", (e) => { e.preventDefault(); log.push(e.defaultPrevented); });
    log.push(et.dispatchEvent(new Event("c", { cancelable: true })));
    log.push(et.dispatchEvent(new Event("c", { cancelable: false })));
    const e = new Event("c", { cancelable: true });
    e.preventDefault();
    log.push(e.defaultPrevented, et.dispatchEvent(e), e.defaultPrevented);
    return log;
  });
});

test("signal option removes the listener on abort; an aborted signal never adds it", () => {
  const log = sameAsNode(({ Event, EventTarget, AbortController, AbortSignal }) => {
    const et = new EventTarget();
    const log = [];
    const c = new AbortController();
    et.addEventListener("x", () => log.push("a"), { signal: c.signal });
    et.addEventListener("x", () => log.push("b"), { signal: c.signal, once: true });
    et.addEventListener("x", () => log.push("never"), { signal: AbortSignal.abort() });
    et.addEventListener("x", () => log.push("c"));
    et.dispatchEvent(new Event("x"));
    c.abort();
    et.dispatchEvent(new Event("x"));
    return log;
  });
  assert.deepEqual(log, ["a", "b", "c", "c"]);
});

test("signal option: a listener removed first is not disturbed; bad signals throw", () => {
  const { ex } = load();
  const et = new ex.EventTarget();
  const log = [];
  const c = new ex.AbortController();
  const f = () => log.push("f");
  et.addEventListener("x", f, { signal: c.signal });
  et.removeEventListener("x", f);
  et.addEventListener("x", f);
  c.abort();
  et.dispatchEvent(new ex.Event("x"));
  assert.deepEqual(log, ["f"]);
  for (const signal of [null, {}, new AbortController().signal, 1]) {
    assert.throws(() => et.addEventListener("x", f, { signal }), { name: "TypeError" });
  }
  assert.doesNotThrow(() => et.addEventListener("x", f, { signal: undefined }));
  // Aborting during dispatch removes a later listener before it runs.
  const c2 = new ex.AbortController();
  const et2 = new ex.EventTarget();
  const log2 = [];
  et2.addEventListener("x", () => { log2.push(1); c2.abort(); });
  et2.addEventListener("x", () => log2.push(2), { signal: c2.signal });
  et2.dispatchEvent(new ex.Event("x"));
  assert.deepEqual(log2, [1]);
});

test("listeners added during dispatch do not run; removed ones do not either", () => {
  // The DOM standard invokes a clone of the listener list (node runs
  // listeners added during dispatch).
  const { ex } = load();
  const log = (({ Event, EventTarget }) => {
    const et = new EventTarget();
    const log = [];
    const late = () => log.push("late");
    const removed = () => log.push("removed");
    et.addEventListener("x", () => {
      log.push("first");
      et.addEventListener("x", late);
      et.removeEventListener("x", removed);
    });
    et.addEventListener("x", removed);
    et.dispatchEvent(new Event("x"));
    log.push("|");
    et.dispatchEvent(new Event("x"));
    return log;
  })(ex);
  assert.deepEqual(log, ["first", "|", "first", "late"]);
});

test("stopImmediatePropagation and stopPropagation", () => {
  // The flags are cleared when dispatch ends, so the event can be
  // dispatched again (node keeps them set).
  const { ex: classes } = load();
  const log = (({ Event, EventTarget }) => {
    const et = new EventTarget();
    const log = [];
    et.addEventListener("a", (e) => { log.push("a1"); e.stopPropagation(); log.push(e.cancelBubble); });
    et.addEventListener("a", () => log.push("a2"));
    et.addEventListener("b", (e) => { log.push("b1"); e.stopImmediatePropagation(); });
    et.addEventListener("b", () => log.push("b2"));
    et.dispatchEvent(new Event("a"));
    const b = new Event("b");
    et.dispatchEvent(b);
    log.push(b.cancelBubble);
    et.dispatchEvent(b);
    return log;
  })(classes);
  assert.deepEqual(log, ["a1", true, "a2", "b1", false, "b1"]);
  // stopPropagation in a capture listener skips the bubbling pass at the target.
  const { ex } = load();
  const et = new ex.EventTarget();
  const order = [];
  et.addEventListener("x", () => order.push("bubble"));
  et.addEventListener("x", (e) => { order.push("capture"); e.stopPropagation(); }, true);
  et.dispatchEvent(new ex.Event("x"));
  // An event stopped before dispatch reaches no listener.
  const pre = new ex.Event("x");
  pre.cancelBubble = true;
  et.dispatchEvent(pre);
  pre.cancelBubble = false;
  assert.equal(pre.cancelBubble, false);
  assert.deepEqual(order, ["capture"]);
});

test("a throwing listener is reported and the others still run", () => {
  const { ex, errors } = load();
  const et = new ex.EventTarget();
  const log = [];
  const boom = new Error("boom");
  et.addEventListener("x", () => log.push(1));
  et.addEventListener("x", () => { throw boom; });
  et.addEventListener("x", { handleEvent: 5 });
  et.addEventListener("x", {});
  et.addEventListener("x", () => log.push(2));
  assert.equal(et.dispatchEvent(new ex.Event("x")), true);
  assert.deepEqual(log, [1, 2]);
  assert.equal(errors.length, 3);
  assert.deepEqual(errors[0], ["Uncaught", boom]);
  assert.equal(errors[1][0], "Uncaught");
  assert.equal(errors[1][1].name, "TypeError");
  assert.match(errors[1][1].message, /handleEvent/);
  assert.equal(errors[2][1].name, "TypeError");
  // A throwing abort listener does not stop the others either.
  const c = new ex.AbortController();
  c.signal.addEventListener("abort", () => { throw "str"; });
  c.signal.addEventListener("abort", () => log.push("abort"));
  c.abort();
  assert.deepEqual(log, [1, 2, "abort"]);
  assert.deepEqual(errors[3], ["Uncaught", "str"]);
});

test("dispatchEvent argument checks and re-dispatch", () => {
  const { ex } = load();
  const et = new ex.EventTarget();
  assert.throws(() => et.dispatchEvent({ type: "x" }), { name: "TypeError", message: /not of type 'Event'/ });
  assert.throws(() => et.dispatchEvent(new Event("x")), { name: "TypeError" });
  assert.throws(() => et.dispatchEvent(), { name: "TypeError", message: /1 argument required/ });
  const e = new ex.Event("x");
  let inner;
  et.addEventListener("x", () => {
    try { et.dispatchEvent(e); } catch (err) { inner = err; }
    try { new ex.EventTarget().dispatchEvent(e); } catch (err) { inner = [inner, err]; }
  });
  et.dispatchEvent(e);
  for (const err of inner) {
    assert.ok(err instanceof DOMException);
    assert.equal(err.name, "InvalidStateError");
    assert.equal(err.code, 11);
    assert.match(err.message, /already being dispatched/);
  }
  // After dispatch, the same event can be dispatched again (its target stays).
  assert.equal(e.target, et);
  assert.doesNotThrow(() => et.dispatchEvent(e));
  assert.throws(() => et.addEventListener("x"), { name: "TypeError", message: /2 arguments required, but only 1 present/ });
  assert.throws(() => et.addEventListener("x", 5), { name: "TypeError", message: /not an object/ });
  assert.throws(() => et.removeEventListener("x", "str"), { name: "TypeError" });
  assert.doesNotThrow(() => et.addEventListener("x", null));
  assert.doesNotThrow(() => et.addEventListener("x", undefined));
  assert.doesNotThrow(() => et.removeEventListener("x", null));
});

test("legacy returnValue, cancelBubble, initEvent", () => {
  const { ex } = load();
  const e = new ex.Event("x", { cancelable: true });
  assert.equal(e.returnValue, true);
  e.returnValue = true;
  assert.equal(e.defaultPrevented, false);
  e.returnValue = false;
  assert.equal(e.defaultPrevented, true);
  assert.equal(e.returnValue, false);
  e.initEvent("y", true);
  assert.deepEqual([e.type, e.bubbles, e.cancelable, e.defaultPrevented], ["y", true, false, false]);
  assert.throws(() => e.initEvent(), { name: "TypeError" });
  const et = new ex.EventTarget();
  const d = new ex.Event("z");
  et.addEventListener("z", (ev) => { ev.initEvent("changed"); });
  et.dispatchEvent(d);
  assert.equal(d.type, "z");
});

test("CustomEvent detail", () => {
  const { ex } = load();
  assert.equal(new ex.CustomEvent("x").detail, null);
  assert.equal(new ex.CustomEvent("x", {}).detail, null);
  assert.equal(new ex.CustomEvent("x", { detail: undefined }).detail, null);
  const obj = { a: 1 };
  const e = new ex.CustomEvent("x", { detail: obj, bubbles: true });
  assert.equal(e.detail, obj);
  assert.equal(e.bubbles, true);
  assert.ok(e instanceof ex.Event);
  assert.throws(() => new ex.CustomEvent(), { name: "TypeError" });
  e.initCustomEvent("y", false, true, 7);
  assert.deepEqual([e.type, e.bubbles, e.cancelable, e.detail], ["y", false, true, 7]);
  const et = new ex.EventTarget();
  let got;
  et.addEventListener("y", (ev) => { got = ev.detail; });
  et.dispatchEvent(e);
  assert.equal(got, 7);
  assert.equal(ex.__platformBrand(e), "CustomEvent");
});

test("EventTarget and Event are subclassable", () => {
  const { ex } = load();
  class Emitter extends ex.EventTarget {
    constructor() { super(); this.count = 0; }
    fire() { return this.dispatchEvent(new Ping()); }
  }
  class Ping extends ex.Event {
    constructor() { super("ping", { cancelable: true }); }
    get kind() { return "ping:" + this.type; }
  }
  const em = new Emitter();
  em.addEventListener("ping", function (e) { this.count++; assert.equal(e.kind, "ping:ping"); e.preventDefault(); });
  assert.equal(em.fire(), false);
  assert.equal(em.count, 1);
  assert.equal(Object.prototype.toString.call(em), "[object EventTarget]");
  assert.ok(em instanceof ex.EventTarget);
  assert.equal(ex.__platformBrand(em), "EventTarget");
});

test("AbortController.abort: reason, one synchronous trusted event, then nothing", () => {
  const { ex } = load();
  const c = new ex.AbortController();
  const s = c.signal;
  assert.equal(c.signal, s);
  assert.equal(s.aborted, false);
  assert.equal(s.reason, undefined);
  assert.doesNotThrow(() => s.throwIfAborted());
  const log = [];
  s.addEventListener("abort", (e) => {
    log.push([e.type, e.isTrusted, e.target === s, s.aborted, e.bubbles, e.cancelable]);
    c.abort("again");
  });
  c.abort();
  log.push("after");
  assert.deepEqual(log, [["abort", true, true, true, false, false], "after"]);
  assert.ok(s.reason instanceof DOMException);
  assert.equal(s.reason.name, "AbortError");
  assert.equal(s.reason.message, "This operation was aborted");
  assert.equal(s.reason.code, 20);
  const r = s.reason;
  c.abort("later");
  assert.equal(s.reason, r);
  assert.throws(() => s.throwIfAborted(), (e) => e === r);
  const c2 = new ex.AbortController();
  c2.abort(null);
  assert.equal(c2.signal.aborted, true);
  assert.equal(c2.signal.reason, null);
  assert.throws(() => c2.signal.throwIfAborted(), (e) => e === null);
  const c3 = new ex.AbortController();
  c3.abort(undefined);
  assert.equal(c3.signal.reason.name, "AbortError");
});

test("AbortController agrees with node on reasons and events", () => {
  sameAsNode(({ AbortController }) => {
    const log = [];
    const c = new AbortController();
    c.signal.onabort = (e) => log.push("handler", e.type);
    c.signal.addEventListener("abort", () => log.push("listener"));
    const reason = { why: 1 };
    c.abort(reason);
    log.push(c.signal.reason === reason, c.signal.aborted);
    try { c.signal.throwIfAborted(); } catch (e) { log.push(e === reason); }
    return log;
  });
});

test("onabort keeps its place among listeners; null removes it", () => {
  const { ex } = load();
  const log = [];
  const c = new ex.AbortController();
  const s = c.signal;
  assert.equal(s.onabort, null);
  s.addEventListener("abort", () => log.push("l1"));
  s.onabort = () => log.push("h-old");
  s.addEventListener("abort", () => log.push("l2"));
  const h = function (e) { log.push("h", this === s, e.type); };
  s.onabort = h;
  assert.equal(s.onabort, h);
  c.abort();
  assert.deepEqual(log, ["l1", "h", true, "abort", "l2"]);

  const log2 = [];
  const c2 = new ex.AbortController();
  c2.signal.onabort = () => log2.push("gone");
  c2.signal.onabort = null;
  c2.signal.addEventListener("abort", () => log2.push("l"));
  c2.signal.onabort = () => log2.push("h");
  c2.signal.onabort = 5; // [LegacyTreatNonObjectAsNull]: not an object, so null
  assert.equal(c2.signal.onabort, null);
  c2.signal.onabort = () => log2.push("h2");
  const obj = {};
  c2.abort();
  assert.deepEqual(log2, ["l", "h2"]);
  // A non-callable object handler is stored and ignored when the event fires.
  const c3 = new ex.AbortController();
  c3.signal.onabort = obj;
  assert.equal(c3.signal.onabort, obj);
  assert.doesNotThrow(() => c3.abort());
});

test("AbortSignal.abort()", () => {
  const { ex } = load();
  const s = ex.AbortSignal.abort();
  assert.equal(s.aborted, true);
  assert.equal(s.reason.name, "AbortError");
  assert.equal(ex.AbortSignal.abort(7).reason, 7);
  assert.ok(s instanceof ex.AbortSignal);
  let fired = false;
  s.onabort = () => { fired = true; };
  assert.equal(fired, false);
});

test("abort algorithms run before the abort event; the internal hook", () => {
  const { ex } = load();
  const c = new ex.AbortController();
  const log = [];
  c.signal.addEventListener("abort", () => log.push("event"));
  const remove = ex.__addAbortAlgorithm(c.signal, function () { log.push("algorithm", this, c.signal.aborted); });
  const removed = ex.__addAbortAlgorithm(c.signal, () => log.push("removed"));
  ex.__addAbortAlgorithm(c.signal, () => { throw new Error("algorithm failure"); });
  ex.__addAbortAlgorithm(c.signal, () => log.push("after failure"));
  removed();
  assert.equal(typeof remove, "function");
  c.abort();
  assert.deepEqual(log, ["algorithm", undefined, true, "after failure", "event"]);
  // Already aborted: the algorithm is not added (and never runs).
  const none = ex.__addAbortAlgorithm(c.signal, () => log.push("late"));
  none();
  assert.equal(log.length, 5);
  assert.throws(() => ex.__addAbortAlgorithm({}, () => {}), { name: "TypeError" });
  assert.throws(() => ex.__addAbortAlgorithm(new ex.AbortController().signal, 5), { name: "TypeError" });
  assert.equal(ex.__isAbortSignal(c.signal), true);
  assert.equal(ex.__isAbortSignal(new AbortController().signal), false);
  assert.equal(ex.__platformBrand(c.signal), "AbortSignal");
  assert.equal(ex.__platformBrand(c), "AbortController");
  assert.equal(ex.__platformBrand(new ex.Event("x")), "Event");
  assert.equal(ex.__platformBrand({}), null);
  assert.equal(ex.__platformBrand(1), null);
});

test("AbortSignal.timeout fires with a TimeoutError", async () => {
  const { ex } = load();
  const s = ex.AbortSignal.timeout(15);
  assert.equal(s.aborted, false);
  const event = await new Promise((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error("timeout signal never fired")), 2000);
    s.addEventListener("abort", (e) => { clearTimeout(guard); resolve(e); });
  });
  assert.equal(s.aborted, true);
  assert.ok(s.reason instanceof DOMException);
  assert.equal(s.reason.name, "TimeoutError");
  assert.equal(s.reason.message, "signal timed out");
  assert.equal(s.reason.code, 23);
  assert.equal(event.isTrusted, true);
  // Same name and code as node's (node's message differs from browsers').
  const n = AbortSignal.timeout(1);
  const keepAlive = setTimeout(() => {}, 2000); // node's timeout timer does not hold the event loop
  await new Promise((r) => n.addEventListener("abort", r));
  clearTimeout(keepAlive);
  assert.deepEqual([s.reason.name, s.reason.code], [n.reason.name, n.reason.code]);
});

test("AbortSignal.timeout arguments and timer delay", () => {
  const calls = [];
  const { ex } = load({ timer: (fn, ms) => { calls.push([typeof fn, ms]); return 1; } });
  ex.AbortSignal.timeout(0);
  ex.AbortSignal.timeout(10.9);
  ex.AbortSignal.timeout("20");
  ex.AbortSignal.timeout(2 ** 40);
  assert.deepEqual(calls, [["function", 0], ["function", 10], ["function", 20], ["function", 0x7fffffff]]);
  for (const bad of [-1, NaN, Infinity, -Infinity, 2 ** 53, 10n, Symbol("x"), "abc"]) {
    assert.throws(() => ex.AbortSignal.timeout(bad), { name: "TypeError" }, String(bad));
  }
  assert.throws(() => ex.AbortSignal.timeout(), { name: "TypeError" });
  assert.equal(calls.length, 4);
});

test("AbortSignal.any follows its sources", () => {
  const { ex } = load();
  const a = new ex.AbortController(), b = new ex.AbortController();
  const any = ex.AbortSignal.any([a.signal, b.signal]);
  assert.equal(any.aborted, false);
  const log = [];
  any.onabort = (e) => log.push("any", e.isTrusted);
  b.abort("b-reason");
  assert.equal(any.aborted, true);
  assert.equal(any.reason, "b-reason");
  a.abort("a-reason");
  assert.equal(any.reason, "b-reason");
  assert.deepEqual(log, ["any", true]);

  // An already-aborted source: aborted at once with the first such reason, no event.
  const pre = ex.AbortSignal.any([new ex.AbortController().signal, ex.AbortSignal.abort("first"), ex.AbortSignal.abort("second")]);
  assert.equal(pre.aborted, true);
  assert.equal(pre.reason, "first");

  // Empty: never aborts. Iterables other than arrays work.
  assert.equal(ex.AbortSignal.any([]).aborted, false);
  const c = new ex.AbortController();
  const fromSet = ex.AbortSignal.any(new Set([c.signal]));
  c.abort();
  assert.equal(fromSet.reason.name, "AbortError");
  assert.equal(fromSet.reason, c.signal.reason);

  for (const bad of [[{}], [null], [new AbortController().signal], 5, {}]) {
    assert.throws(() => ex.AbortSignal.any(bad), { name: "TypeError" });
  }
  assert.throws(() => ex.AbortSignal.any(), { name: "TypeError" });
});

test("AbortSignal.any of dependent signals follows the original sources, in spec order", () => {
  const { ex } = load();
  const c = new ex.AbortController();
  const a = ex.AbortSignal.any([c.signal]);
  const b = ex.AbortSignal.any([a]);
  const d = ex.AbortSignal.any([a, b, c.signal]);
  const log = [];
  c.signal.onabort = () => log.push(`c a=${a.aborted} b=${b.aborted} d=${d.aborted}`);
  a.onabort = () => log.push("a");
  b.onabort = () => log.push("b");
  d.onabort = () => log.push("d");
  c.abort("why");
  // DOM standard: dependents get the reason before any event fires, then
  // the source's event, then each dependent's, in creation order.
  assert.deepEqual(log, ["c a=true b=true d=true", "a", "b", "d"]);
  assert.deepEqual([a.reason, b.reason, d.reason], ["why", "why", "why"]);
});

test("AbortSignal.any with a timeout source", async () => {
  const { ex } = load();
  const c = new ex.AbortController();
  const s = ex.AbortSignal.any([c.signal, ex.AbortSignal.timeout(10)]);
  await new Promise((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error("never aborted")), 2000);
    s.addEventListener("abort", () => { clearTimeout(guard); resolve(); });
  });
  assert.equal(s.reason.name, "TimeoutError");
  c.abort();
  assert.equal(s.reason.name, "TimeoutError");
});

test("abort listeners can remove other listeners and abort other signals re-entrantly", () => {
  sameAsNode(({ AbortController }) => {
    const log = [];
    const c1 = new AbortController(), c2 = new AbortController();
    const second = () => log.push("second (removed)");
    c1.signal.addEventListener("abort", () => { log.push("c1"); c2.abort("from c1"); c1.signal.removeEventListener("abort", second); });
    c1.signal.addEventListener("abort", second);
    c2.signal.addEventListener("abort", () => log.push("c2 " + c2.signal.reason));
    c1.abort();
    log.push(c1.signal.aborted, c2.signal.aborted);
    return log;
  });
});

test("internal state survives a script tampering with built-ins after loading", () => {
  const { ex, run } = load();
  run(`
    Array.prototype.push = function () { throw new Error("push hijacked"); };
    Array.prototype[Symbol.iterator] = function () { throw new Error("iterator hijacked"); };
    Map.prototype.get = Map.prototype.set = Set.prototype.add = Set.prototype.values = function () { throw new Error("collections hijacked"); };
    WeakMap.prototype.get = function () { throw new Error("weakmap hijacked"); };
    Reflect.apply = function () { throw new Error("apply hijacked"); };
    Object.defineProperty(Object.prototype, "removed", { set() { throw new Error("setter hijacked"); }, configurable: true });
  `);
  const log = run(`
    const log = [];
    const et = new EventTarget();
    const c = new AbortController();
    et.addEventListener("x", () => log[log.length] = "x", { signal: c.signal, once: true });
    et.addEventListener("x", () => log[log.length] = "y");
    et.dispatchEvent(new Event("x"));
    // (A sequence argument is read through its iterator, as Web IDL says,
    // so the hijacked array iterator would be used: pass another iterable.)
    const any = AbortSignal.any({ *[Symbol.iterator]() { yield c.signal; } });
    any.onabort = () => log[log.length] = "aborted";
    c.abort();
    et.dispatchEvent(new Event("x"));
    log;
  `);
  assert.deepEqual(Array.from({ length: log.length }, (_, i) => log[i]), ["x", "y", "aborted", "y"]);
  assert.ok(ex.Event);
});
