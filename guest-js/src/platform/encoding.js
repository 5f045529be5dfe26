// TextEncoder and TextDecoder (the WHATWG Encoding standard), UTF-8 only:
// every other label is a RangeError that says so. The bytes are converted
// natively (platform.utf8Encode, utf8Decode), with the standard's
// replacement of invalid sequences, `fatal`, `ignoreBOM` and streaming.
(function (platform, load) {
  "use strict";
  const utf8Encode = platform.utf8Encode, utf8EncodeInto = platform.utf8EncodeInto;
  const utf8Decode = platform.utf8Decode, utf8Incomplete = platform.utf8Incomplete;
  const toWellFormed = String.prototype.toWellFormed;
  const ReflectApply = Reflect.apply;
  const Uint8ArrayCtor = Uint8Array;
  const ArrayBufferIsView = ArrayBuffer.isView;
  function usv(v) {
    if (typeof v === "symbol") throw new TypeError("Cannot convert a Symbol value to a string");
    return ReflectApply(toWellFormed, String(v), []);
  }
  // The labels of UTF-8 in the Encoding standard.
  const UTF8_LABELS = ["unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8", "x-unicode20utf8"];
  // Bytes of a BufferSource, as a Uint8Array over the same memory.
  function bytesOf(input, who) {
    if (input instanceof ArrayBuffer || (typeof SharedArrayBuffer === "function" && input instanceof SharedArrayBuffer)) {
      return new Uint8ArrayCtor(input);
    }
    if (ArrayBufferIsView(input)) return new Uint8ArrayCtor(input.buffer, input.byteOffset, input.byteLength);
    throw new TypeError(who + ": the input must be an ArrayBuffer or an ArrayBuffer view");
  }

  const encoders = new WeakSet();
  class TextEncoder {
    constructor() { encoders.add(this); }
    get encoding() { check(this); return "utf-8"; }
    encode(input = "") { check(this); return utf8Encode(usv(input)); }
    encodeInto(source, destination) {
      check(this);
      if (!(destination instanceof Uint8ArrayCtor)) throw new TypeError("TextEncoder.encodeInto: the destination must be a Uint8Array");
      const [read, written] = utf8EncodeInto(usv(source), destination);
      return { read, written };
    }
  }
  function check(self) { if (!encoders.has(self)) throw new TypeError("Illegal invocation: not a TextEncoder"); }

  const decoders = new WeakMap(); // decoder -> { fatal, ignoreBOM, pending: Uint8Array | null, started }
  function dstate(self) {
    const s = decoders.get(self);
    if (s === undefined) throw new TypeError("Illegal invocation: not a TextDecoder");
    return s;
  }
  class TextDecoder {
    constructor(label = "utf-8", options = undefined) {
      const name = String(label).trim().toLowerCase();
      if (!UTF8_LABELS.includes(name)) {
        throw new RangeError("TextDecoder: the encoding " + JSON.stringify(String(label)) + " is not supported (the wrepl sandbox decodes UTF-8 only)");
      }
      const o = options === undefined || options === null ? {} : options;
      decoders.set(this, { fatal: !!o.fatal, ignoreBOM: !!o.ignoreBOM, pending: null, started: false });
    }
    get encoding() { dstate(this); return "utf-8"; }
    get fatal() { return dstate(this).fatal; }
    get ignoreBOM() { return dstate(this).ignoreBOM; }
    decode(input = undefined, options = undefined) {
      const s = dstate(this);
      const stream = options !== undefined && options !== null && !!options.stream;
      let bytes = input === undefined ? new Uint8ArrayCtor(0) : bytesOf(input, "TextDecoder.decode");
      if (s.pending !== null) {
        const joined = new Uint8ArrayCtor(s.pending.length + bytes.length);
        joined.set(s.pending, 0);
        joined.set(bytes, s.pending.length);
        bytes = joined;
        s.pending = null;
      }
      let keep = 0;
      if (stream) {
        keep = utf8Incomplete(bytes);
        if (keep > 0) s.pending = bytes.slice(bytes.length - keep);
        bytes = bytes.subarray(0, bytes.length - keep);
      }
      // The BOM is looked for only at the very start of a stream.
      const skipBOM = s.ignoreBOM || s.started;
      let text;
      try {
        text = utf8Decode(bytes, s.fatal, skipBOM);
      } catch (e) {
        s.pending = null;
        s.started = false;
        throw e;
      }
      if (bytes.length > 0) s.started = true;
      if (!stream) {
        s.started = false;
        s.pending = null;
      }
      return text;
    }
  }
  for (const C of [TextEncoder, TextDecoder]) {
    Reflect.defineProperty(C.prototype, Symbol.toStringTag, { value: C.name, configurable: true });
    for (const k of Object.getOwnPropertyNames(C.prototype)) {
      if (k === "constructor") continue;
      const d = Reflect.getOwnPropertyDescriptor(C.prototype, k);
      d.enumerable = true;
      Reflect.defineProperty(C.prototype, k, d);
    }
  }
  return { TextEncoder, TextDecoder };
})
