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
  const nativeSetTimer = native.setTimer;
  const nativeClearTimer = native.clearTimer;
  const nativeWrite = native.write;
  const SEALED = native.sealed;
  const nativeIsPromise = native.isPromise;
  const nativeBrandOf = native.brandOf;
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
  const MapIterNext = ObjectGetProto(new Map().entries()).next;
  const SetHas = Set.prototype.has, SetAdd = Set.prototype.add, SetDelete = Set.prototype.delete;
  const SetValues = Set.prototype.values;
  const SetIterNext = ObjectGetProto(new Set().values()).next;
  const ArrayBufferIsView = ArrayBuffer.isView;
  const TypedArrayLength = ObjectGetOwnDesc(ObjectGetProto(Uint8Array.prototype), "length").get;
  const StringSlice = String.prototype.slice;
  const StringIndexOf = String.prototype.indexOf;
  const StringToWellFormed = typeof String.prototype.toWellFormed === "function" ? String.prototype.toWellFormed : null;
  const RegExpExec = RegExp.prototype.exec;
  // For the terminal view (platform/inspect.js, loaded on first use), so
  // that it never uses what a script replaced.
  const inspectIntrinsics = {
    __proto__: null,
    ReflectOwnKeys: Reflect.ownKeys, SymbolToString: Symbol.prototype.toString, SymbolToStringTag: Symbol.toStringTag,
    StringPadStart: String.prototype.padStart, StringPadEnd: String.prototype.padEnd,
    StringIncludes: String.prototype.includes, StringCharCodeAt: String.prototype.charCodeAt,
    StringRepeat: String.prototype.repeat, NumberToString: Number.prototype.toString,
    RegExpSource: ObjectGetOwnDesc(RegExp.prototype, "source").get,
    RegExpFlags: ObjectGetOwnDesc(RegExp.prototype, "flags").get,
    ArrayJoin: Array.prototype.join, ArrayProto: Array.prototype,
    ArrayBufferByteLength: ObjectGetOwnDesc(ArrayBuffer.prototype, "byteLength").get, Uint8ArrayCtor: Uint8Array,
    TypedArrayToStringTag: ObjectGetOwnDesc(ObjectGetProto(Uint8Array.prototype), Symbol.toStringTag).get,
    AsyncFunctionProto: ObjectGetProto(async function () {}),
    GeneratorFunctionProto: ObjectGetProto(function* () {}),
    AsyncGeneratorFunctionProto: ObjectGetProto(async function* () {}),
    MathMax: Math.max, MathMin: Math.min, MathSqrt: Math.sqrt, MathRound: Math.round, MathFloor: Math.floor,
    ObjectIs: Object.is,
  };
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
  // The built-in class of an object, natively (no getter that throws for every other object).
  const BRAND_DATE = 1, BRAND_MAP = 2, BRAND_SET = 3;
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

