// wrepl fetch: `fetch`, `Headers`, `Request`, `Response`, `Blob`, `File` and
// `FormData` after the Fetch standard (https://fetch.spec.whatwg.org/), the
// File API and the HTML form-data encoding, written in JavaScript on top of ONE
// host tool call per HTTP exchange: `WebFetch` (the host does the networking,
// the permission checks and the recording; it never follows redirects, so the
// redirect logic lives here). The completion value of this file is a function
// the sandbox calls lazily with `platform` (native helpers) and `load` (other
// platform modules); the returned object's properties become globals.
//
// Bodies are always whole byte strings: there are no ReadableStreams. The
// `body` getter returns null for a null body and otherwise throws a TypeError
// that points at text()/json()/arrayBuffer()/blob()/bytes(); Blob.stream()
// throws likewise; a ReadableStream given as a body is a TypeError.
// Deliberate differences from browsers (as in Node's undici and Deno): no
// CORS, no forbidden request headers, no cookie jar, no cache; mode, cache,
// credentials, referrer, integrity and keepalive are validated and exposed but
// otherwise ignored; redirect "manual" returns the 3xx response itself (not an
// opaque-redirect response). A method that is not one of the six normalized
// ones (e.g. "patch") keeps its case in Request.method but is sent uppercased,
// because the WebFetch tool takes an uppercase method. Framing headers the
// host's HTTP client owns (content-length, connection, ...) stay in
// Request.headers but are not sent (see CLIENT_OWNED). Header values are
// ByteStrings (code points up to U+00FF, as WebIDL says) and reach the host as
// those code points. Request and response headers are stored with lowercase
// names. The host's answer is trusted for shape only: it is validated and a
// malformed one is a "fetch failed" TypeError.
(function (platform, load) {
  "use strict";

  // ---- captured at load ---------------------------------------------------
  const utf8Encode = platform.utf8Encode;
  const utf8Decode = platform.utf8Decode;
  const base64Encode = platform.base64Encode;
  const base64Decode = platform.base64Decode;
  const startCall = platform.startCall;
  const ReflectApply = Reflect.apply;
  const ObjectDefine = Object.defineProperty;
  const ObjectGetOwnDesc = Object.getOwnPropertyDescriptor;
  const ArrayBufferIsView = ArrayBuffer.isView;
  const ArrayBufferByteLength = ObjectGetOwnDesc(ArrayBuffer.prototype, "byteLength").get;
  const JSONParse = JSON.parse;
  const JSONStringify = JSON.stringify;
  const MathRandom = Math.random;
  const DateNow = Date.now;
  const PromiseCtor = Promise;
  const StringToWellFormed = typeof String.prototype.toWellFormed === "function" ? String.prototype.toWellFormed : null;
  const IteratorPrototype = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));

  let urlModule = null, eventsModule = null;
  function urlApi() { return urlModule || (urlModule = load("url")); }
  function eventsApi() { return eventsModule || (eventsModule = load("events")); }

  // ---- WebIDL-ish conversions and errors ------------------------------------
  function illegal() { return new TypeError("Illegal invocation"); }
  function isObject(v) { return (typeof v === "object" && v !== null) || typeof v === "function"; }
  function needArgs(ctx, n, have) {
    if (have < n) {
      throw new TypeError(ctx + ": " + n + " argument" + (n === 1 ? "" : "s") + " required, but" +
        (have ? " only " : " ") + have + " found.");
    }
  }
  // ECMAScript ToString (String(v) would accept a Symbol).
  function str(v) {
    if (typeof v === "string") return v;
    if (typeof v === "symbol") throw new TypeError("Cannot convert a Symbol value to a string");
    return String(v);
  }
  // A USVString: lone surrogates become U+FFFD.
  function toUSV(v) {
    const s = str(v);
    if (StringToWellFormed !== null) return ReflectApply(StringToWellFormed, s, []);
    return s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(^|[^\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
      (m, pre) => (pre === undefined ? "\uFFFD" : pre + "\uFFFD"));
  }
  function toByteString(v) {
    const s = str(v);
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c > 255) {
        throw new TypeError("Cannot convert argument to a ByteString because the character at index " + i +
          " has a value of " + c + " which is greater than 255.");
      }
    }
    return s;
  }
  function dictionary(v, ctx) {
    if (v === undefined || v === null) return null;
    if (!isObject(v)) throw new TypeError(ctx + ": the options argument must be an object.");
    return v;
  }
  function member(d, key) { return d === null ? undefined : d[key]; }
  function toEnum(ctx, name, v, allowed) {
    const s = str(v);
    for (let i = 0; i < allowed.length; i++) if (allowed[i] === s) return s;
    throw new TypeError(ctx + ": " + JSONStringify(s) + " is not a valid value for " + name + "; expected one of " +
      allowed.map((a) => JSONStringify(a)).join(", ") + ".");
  }
  function toUnsignedShort(v) {
    let x = +v;
    if (x !== x || x === Infinity || x === -Infinity) return 0;
    x = Math.trunc(x) % 65536;
    return x < 0 ? x + 65536 : x + 0;
  }
  function toLongLong(v) {
    const x = +v;
    if (x !== x || x === Infinity || x === -Infinity) return 0;
    return Math.trunc(x) + 0;
  }
  function isArrayBuffer(v) {
    if (!isObject(v)) return false;
    try { ReflectApply(ArrayBufferByteLength, v, []); return true; } catch (_) { return false; }
  }
  // Marks prototype members enumerable (as WebIDL does) and sets the tag.
  function webidlClass(C, tag) {
    const proto = C.prototype;
    const names = Object.getOwnPropertyNames(proto);
    for (let i = 0; i < names.length; i++) {
      if (names[i] === "constructor") continue;
      const d = ObjectGetOwnDesc(proto, names[i]);
      d.enumerable = true;
      ObjectDefine(proto, names[i], d);
    }
    ObjectDefine(proto, Symbol.toStringTag, { value: tag, writable: false, enumerable: false, configurable: true });
  }

  // ---- bytes ----------------------------------------------------------------
  function viewBytes(v) { return new Uint8Array(v.buffer, v.byteOffset, v.byteLength); }
  function concatBytes(chunks) {
    let n = 0;
    for (let i = 0; i < chunks.length; i++) n += chunks[i].length;
    const out = new Uint8Array(n);
    let at = 0;
    for (let i = 0; i < chunks.length; i++) { out.set(chunks[i], at); at += chunks[i].length; }
    return out;
  }
  function indexOfBytes(hay, needle, from) {
    const n = needle.length, last = hay.length - n, first = needle[0];
    outer: for (let i = from < 0 ? 0 : from; i <= last; i++) {
      if (hay[i] !== first) continue;
      for (let j = 1; j < n; j++) if (hay[i + j] !== needle[j]) continue outer;
      return i;
    }
    return -1;
  }
  function latin1(bytes) {
    let s = "";
    for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
    return s;
  }
  function randomHex(n) {
    let s = "";
    while (s.length < n) s += Math.floor(MathRandom() * 0x100000000).toString(16).padStart(8, "0");
    return s.slice(0, n);
  }
  // "UTF-8 decode": replacement characters for invalid bytes, a leading BOM removed.
  function decodeText(bytes) { return utf8Decode(bytes, false, false); }

  // ---- HTTP grammar -----------------------------------------------------------
  const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  const HTTP_WS = /^[\t\n\r ]+|[\t\n\r ]+$/g;
  const BAD_VALUE = /[\0\r\n]/;
  const REASON_PHRASE = /^[\t\x20-\x7E\x80-\xFF]*$/;
  function isToken(s) { return TOKEN.test(s); }
  function trimHttpWhitespace(s) { return s.replace(HTTP_WS, ""); }
  function trimTabSpace(s) { return s.replace(/^[\t ]+|[\t ]+$/g, ""); }

  // ---- MIME types (https://mimesniff.spec.whatwg.org/) -------------------------
  function isWs(c) { return c === "\t" || c === "\n" || c === "\r" || c === " "; }
  // Collects an HTTP quoted string starting at the '"' at pos.p.
  function collectQuoted(input, pos, extractValue) {
    const start = pos.p;
    let value = "";
    pos.p++;
    for (;;) {
      while (pos.p < input.length && input[pos.p] !== "\"" && input[pos.p] !== "\\") value += input[pos.p++];
      if (pos.p >= input.length) break;
      const q = input[pos.p++];
      if (q === "\\") {
        if (pos.p >= input.length) { value += "\\"; break; }
        value += input[pos.p++];
      } else break;
    }
    return extractValue ? value : input.slice(start, pos.p);
  }
  function parseMime(input) {
    input = trimHttpWhitespace(input);
    const pos = { p: 0 };
    let i = input.indexOf("/");
    if (i < 0) return null;
    const type = input.slice(0, i);
    if (!type || !isToken(type)) return null;
    let j = input.indexOf(";", i + 1);
    if (j < 0) j = input.length;
    const subtype = input.slice(i + 1, j).replace(/[\t\n\r ]+$/, "");
    if (!subtype || !isToken(subtype)) return null;
    const mime = { type: type.toLowerCase(), subtype: subtype.toLowerCase(), params: new Map() };
    pos.p = j;
    while (pos.p < input.length) {
      pos.p++; // ';'
      while (pos.p < input.length && isWs(input[pos.p])) pos.p++;
      let name = "";
      while (pos.p < input.length && input[pos.p] !== ";" && input[pos.p] !== "=") name += input[pos.p++];
      name = name.toLowerCase();
      if (pos.p >= input.length) break;
      if (input[pos.p] === ";") continue;
      pos.p++; // '='
      if (pos.p >= input.length) break;
      let value;
      if (input[pos.p] === "\"") {
        value = collectQuoted(input, pos, true);
        while (pos.p < input.length && input[pos.p] !== ";") pos.p++;
      } else {
        value = "";
        while (pos.p < input.length && input[pos.p] !== ";") value += input[pos.p++];
        value = value.replace(/[\t\n\r ]+$/, "");
        if (!value) continue;
      }
      if (name && isToken(name) && /^[\t\x20-\x7E\x80-\xFF]*$/.test(value) && !mime.params.has(name)) {
        mime.params.set(name, value);
      }
    }
    return mime;
  }
  function essence(m) { return m.type + "/" + m.subtype; }
  function serializeMime(m) {
    let s = essence(m);
    for (const [name, value] of m.params) {
      s += ";" + name + "=";
      s += value && isToken(value) ? value : "\"" + value.replace(/(["\\])/g, "\\$1") + "\"";
    }
    return s;
  }
  // "getting, decoding, and splitting" a header value.
  function splitHeaderValue(input) {
    const values = [];
    const pos = { p: 0 };
    let temp = "";
    for (;;) {
      while (pos.p < input.length && input[pos.p] !== "\"" && input[pos.p] !== ",") temp += input[pos.p++];
      if (pos.p < input.length && input[pos.p] === "\"") {
        temp += collectQuoted(input, pos, false);
        if (pos.p < input.length) continue;
      }
      values.push(trimTabSpace(temp));
      temp = "";
      if (pos.p >= input.length) return values;
      pos.p++; // ','
    }
  }
  // "extract a MIME type" from a header list; null for failure.
  function extractMime(hs) {
    const raw = headersGet(hs, "content-type");
    if (raw === null) return null;
    let charset = null, ess = null, mime = null;
    const values = splitHeaderValue(raw);
    for (let i = 0; i < values.length; i++) {
      const t = parseMime(values[i]);
      if (t === null || essence(t) === "*/*") continue;
      mime = t;
      if (essence(mime) !== ess) {
        charset = mime.params.has("charset") ? mime.params.get("charset") : null;
        ess = essence(mime);
      } else if (!mime.params.has("charset") && charset !== null) {
        mime.params.set("charset", charset);
      }
    }
    return mime;
  }

  // ---- iterators ----------------------------------------------------------------
  // A pair iterator over a live list: `source()` is asked for the current pairs
  // at every step (so mutations during iteration are seen, as WebIDL says).
  function pairIteratorClass(tag) {
    class PairIterator {
      #source; #kind; #index = 0;
      constructor(source, kind) { this.#source = source; this.#kind = kind; }
      next() {
        if (!isObject(this) || !(#source in this)) throw illegal();
        const pairs = this.#source();
        if (this.#index >= pairs.length) return { value: undefined, done: true };
        const p = pairs[this.#index++];
        const k = this.#kind;
        return { value: k === "key" ? p[0] : k === "value" ? p[1] : [p[0], p[1]], done: false };
      }
    }
    Object.setPrototypeOf(PairIterator.prototype, IteratorPrototype);
    webidlClass(PairIterator, tag);
    return PairIterator;
  }
  const HeadersIterator = pairIteratorClass("Headers Iterator");
  const FormDataIterator = pairIteratorClass("FormData Iterator");

  // ---- Headers ----------------------------------------------------------------
  // State: { list: [[lowercase name, value], ...], guard, sorted }.
  let headersState;
  function immutableError(ctx) {
    return new TypeError(ctx + ": these headers are immutable (they belong to a fetched Response, " +
      "Response.error() or Response.redirect()); copy them first: new Headers(response.headers)");
  }
  function validName(ctx, name) {
    name = toByteString(name);
    if (!isToken(name)) throw new TypeError(ctx + ": \"" + name + "\" is an invalid header name.");
    return name.toLowerCase();
  }
  function validValue(ctx, value) {
    value = trimHttpWhitespace(toByteString(value));
    if (BAD_VALUE.test(value)) throw new TypeError(ctx + ": \"" + value + "\" is an invalid header value.");
    return value;
  }
  function headersGet(s, lname) {
    let out = null;
    const list = s.list;
    for (let i = 0; i < list.length; i++) {
      if (list[i][0] === lname) out = out === null ? list[i][1] : out + ", " + list[i][1];
    }
    return out;
  }
  function headersHas(s, lname) {
    const list = s.list;
    for (let i = 0; i < list.length; i++) if (list[i][0] === lname) return true;
    return false;
  }
  function headersAppend(s, name, value, ctx) {
    const n = validName(ctx, name);
    const v = validValue(ctx, value);
    if (s.guard === "immutable") throw immutableError(ctx);
    s.list.push([n, v]);
    s.sorted = null;
  }
  function headersDelete(s, lname) {
    const list = s.list;
    let w = 0;
    for (let r = 0; r < list.length; r++) if (list[r][0] !== lname) list[w++] = list[r];
    list.length = w;
    s.sorted = null;
  }
  function sortAndCombine(s) {
    if (s.sorted !== null) return s.sorted;
    const list = s.list.slice();
    // Stable sort by name (code-unit order: names are lowercase ASCII).
    const idx = list.map((_, i) => i);
    idx.sort((a, b) => (list[a][0] < list[b][0] ? -1 : list[a][0] > list[b][0] ? 1 : a - b));
    const out = [];
    for (let k = 0; k < idx.length; k++) {
      const [name, value] = list[idx[k]];
      if (name === "set-cookie") { out.push([name, value]); continue; }
      const last = out.length ? out[out.length - 1] : null;
      if (last !== null && last[0] === name) last[1] += ", " + value;
      else out.push([name, value]);
    }
    s.sorted = out;
    return out;
  }
  function fillHeaders(s, init, ctx) {
    if (!isObject(init)) {
      throw new TypeError(ctx + ": Argument 1 could not be converted to one of: " +
        "sequence<sequence<ByteString>>, record<ByteString, ByteString>.");
    }
    const other = isHeaders(init) ? headersState(init) : null;
    if (other !== null) {
      const list = other.list;
      for (let i = 0; i < list.length; i++) {
        if (s.guard === "immutable") throw immutableError(ctx);
        s.list.push([list[i][0], list[i][1]]);
      }
      s.sorted = null;
      return;
    }
    const iter = init[Symbol.iterator];
    if (iter !== undefined && iter !== null) {
      if (typeof iter !== "function") throw new TypeError(ctx + ": Argument 1 is not iterable.");
      const pairs = [];
      for (const pair of init) {
        if (!isObject(pair)) throw new TypeError(ctx + ": each header must be a [name, value] pair.");
        const p = Array.from(pair);
        if (p.length !== 2) throw new TypeError(ctx + ": expected name/value pair to be length 2, found " + p.length + ".");
        pairs.push([toByteString(p[0]), toByteString(p[1])]);
      }
      for (let i = 0; i < pairs.length; i++) headersAppend(s, pairs[i][0], pairs[i][1], "Headers.append");
      return;
    }
    const keys = Reflect.ownKeys(init);
    const pairs = [];
    for (let i = 0; i < keys.length; i++) {
      const d = Reflect.getOwnPropertyDescriptor(init, keys[i]);
      if (d === undefined || !d.enumerable) continue;
      if (typeof keys[i] === "symbol") throw new TypeError(ctx + ": a header name cannot be a Symbol.");
      pairs.push([toByteString(keys[i]), toByteString(init[keys[i]])]);
    }
    for (let i = 0; i < pairs.length; i++) headersAppend(s, pairs[i][0], pairs[i][1], "Headers.append");
  }
  let isHeaders;
  class Headers {
    #s;
    constructor(init = undefined) {
      this.#s = { __proto__: null, list: [], guard: "none", sorted: null };
      if (init !== undefined) fillHeaders(this.#s, init, "Headers constructor");
    }
    static {
      isHeaders = (o) => isObject(o) && #s in o;
      headersState = (o) => { if (!isObject(o) || !(#s in o)) throw illegal(); return o.#s; };
    }
    append(name, value) {
      const s = headersState(this);
      needArgs("Headers.append", 2, arguments.length);
      headersAppend(s, name, value, "Headers.append");
    }
    delete(name) {
      const s = headersState(this);
      needArgs("Headers.delete", 1, arguments.length);
      const n = validName("Headers.delete", name);
      if (s.guard === "immutable") throw immutableError("Headers.delete");
      if (headersHas(s, n)) headersDelete(s, n);
    }
    get(name) {
      const s = headersState(this);
      needArgs("Headers.get", 1, arguments.length);
      return headersGet(s, validName("Headers.get", name));
    }
    getSetCookie() {
      const s = headersState(this);
      const out = [];
      for (let i = 0; i < s.list.length; i++) if (s.list[i][0] === "set-cookie") out.push(s.list[i][1]);
      return out;
    }
    has(name) {
      const s = headersState(this);
      needArgs("Headers.has", 1, arguments.length);
      return headersHas(s, validName("Headers.has", name));
    }
    set(name, value) {
      const s = headersState(this);
      needArgs("Headers.set", 2, arguments.length);
      const n = validName("Headers.set", name);
      const v = validValue("Headers.set", value);
      if (s.guard === "immutable") throw immutableError("Headers.set");
      const list = s.list;
      let found = -1;
      for (let i = 0; i < list.length; i++) if (list[i][0] === n) { found = i; break; }
      if (found < 0) list.push([n, v]);
      else {
        list[found][1] = v;
        let w = found + 1;
        for (let r = found + 1; r < list.length; r++) if (list[r][0] !== n) list[w++] = list[r];
        list.length = w;
      }
      s.sorted = null;
    }
    forEach(callback, thisArg = undefined) {
      const s = headersState(this);
      needArgs("Headers.forEach", 1, arguments.length);
      if (typeof callback !== "function") throw new TypeError("Headers.forEach: Argument 1 is not a function.");
      for (let i = 0; ; i++) {
        const pairs = sortAndCombine(s);
        if (i >= pairs.length) break;
        ReflectApply(callback, thisArg, [pairs[i][1], pairs[i][0], this]);
      }
    }
    entries() { const s = headersState(this); return new HeadersIterator(() => sortAndCombine(s), "key+value"); }
    keys() { const s = headersState(this); return new HeadersIterator(() => sortAndCombine(s), "key"); }
    values() { const s = headersState(this); return new HeadersIterator(() => sortAndCombine(s), "value"); }
  }
  webidlClass(Headers, "Headers");
  ObjectDefine(Headers.prototype, Symbol.iterator, {
    value: Headers.prototype.entries, writable: true, enumerable: false, configurable: true,
  });
  function newHeaders(guard) {
    const h = new Headers();
    headersState(h).guard = guard;
    return h;
  }
  function copyHeaders(h) {
    const s = headersState(h);
    const c = new Headers();
    const cs = headersState(c);
    for (let i = 0; i < s.list.length; i++) cs.list.push([s.list[i][0], s.list[i][1]]);
    cs.guard = s.guard;
    return c;
  }

  // ---- Blob and File ----------------------------------------------------------------
  // State: { bytes: Uint8Array (never mutated, so shared freely), type }.
  let blobState, isBlob, setBlobState;
  function normalizeBlobType(t) {
    const s = str(t);
    return /^[\x20-\x7E]*$/.test(s) ? s.toLowerCase() : "";
  }
  // Converts the sequence<BlobPart> (strings are kept, endings applied later).
  function convertBlobParts(parts, ctx) {
    if (parts === undefined) return [];
    if (!isObject(parts) || typeof parts[Symbol.iterator] !== "function") {
      throw new TypeError(ctx + ": Argument 1 must be a sequence (an array of strings, ArrayBuffers, typed arrays, DataViews or Blobs).");
    }
    const out = [];
    for (const part of parts) {
      if (isBlob(part)) out.push(blobState(part).bytes);
      else if (isArrayBuffer(part)) out.push(new Uint8Array(part).slice());
      else if (ArrayBufferIsView(part)) out.push(viewBytes(part).slice());
      else out.push(toUSV(part));
    }
    return out;
  }
  function blobPartsBytes(parts, endings) {
    const chunks = [];
    for (let i = 0; i < parts.length; i++) {
      let p = parts[i];
      if (typeof p === "string") {
        if (endings === "native") p = p.replace(/\r\n|\r/g, "\n");
        chunks.push(utf8Encode(p));
      } else chunks.push(p);
    }
    return chunks.length === 1 && typeof parts[0] !== "string" ? chunks[0] : concatBytes(chunks);
  }
  function blobOptions(options, ctx, withLastModified) {
    const d = dictionary(options, ctx);
    const endingsRaw = member(d, "endings");
    const endings = endingsRaw === undefined ? "transparent" : toEnum(ctx, "endings", endingsRaw, ["transparent", "native"]);
    let lastModified;
    if (withLastModified) {
      const lm = member(d, "lastModified");
      lastModified = lm === undefined ? DateNow() : toLongLong(lm);
    }
    const typeRaw = member(d, "type");
    const type = typeRaw === undefined ? "" : normalizeBlobType(typeRaw);
    return { endings, type, lastModified };
  }
  class Blob {
    #s;
    constructor(blobParts = undefined, options = undefined) {
      const parts = convertBlobParts(blobParts, "Blob constructor");
      const o = blobOptions(options, "Blob constructor", false);
      this.#s = { __proto__: null, bytes: blobPartsBytes(parts, o.endings), type: o.type };
    }
    static {
      isBlob = (o) => isObject(o) && #s in o;
      blobState = (o) => { if (!isObject(o) || !(#s in o)) throw illegal(); return o.#s; };
      setBlobState = (o, bytes, type) => { o.#s = { __proto__: null, bytes, type }; };
    }
    get size() { return blobState(this).bytes.length; }
    get type() { return blobState(this).type; }
    slice(start = undefined, end = undefined, contentType = undefined) {
      const s = blobState(this);
      const size = s.bytes.length;
      let from = start === undefined ? 0 : toLongLong(start);
      let to = end === undefined ? size : toLongLong(end);
      from = from < 0 ? Math.max(size + from, 0) : Math.min(from, size);
      to = to < 0 ? Math.max(size + to, 0) : Math.min(to, size);
      const b = new Blob();
      setBlobState(b, s.bytes.subarray(from, Math.max(to, from)), contentType === undefined ? "" : normalizeBlobType(contentType));
      return b;
    }
    // async: a brand-check failure is a rejection
    async text() { return decodeText(blobState(this).bytes); }
    async arrayBuffer() { return blobState(this).bytes.slice().buffer; }
    async bytes() { return blobState(this).bytes.slice(); }
    stream() {
      blobState(this);
      throw new TypeError("Blob.stream: ReadableStream is not supported in wrepl; " +
        "read the whole Blob with text(), arrayBuffer() or bytes().");
    }
  }
  webidlClass(Blob, "Blob");
  function makeBlob(bytes, type) {
    const b = new Blob();
    setBlobState(b, bytes, type);
    return b;
  }

  let fileState, isFile;
  class File extends Blob {
    #f;
    constructor(fileBits, fileName, options = undefined) {
      needArgs("File constructor", 2, arguments.length);
      const parts = convertBlobParts(fileBits, "File constructor");
      const name = toUSV(fileName);
      const o = blobOptions(options, "File constructor", true);
      super();
      setBlobState(this, blobPartsBytes(parts, o.endings), o.type);
      this.#f = { __proto__: null, name, lastModified: o.lastModified };
    }
    static {
      isFile = (o) => isObject(o) && #f in o;
      fileState = (o) => { if (!isObject(o) || !(#f in o)) throw illegal(); return o.#f; };
    }
    get name() { return fileState(this).name; }
    get lastModified() { return fileState(this).lastModified; }
  }
  webidlClass(File, "File");
  function makeFile(bytes, type, name, lastModified) {
    const f = new File([], name, { lastModified });
    setBlobState(f, bytes, type);
    return f;
  }

  // ---- FormData -----------------------------------------------------------------
  // State: { list: [[name, string | File], ...] }.
  let formDataState;
  function formDataEntry(ctx, name, value, filename, argc) {
    name = toUSV(name);
    if (isBlob(value)) {
      const b = blobState(value);
      if (filename !== undefined) {
        value = makeFile(b.bytes, b.type, toUSV(filename), isFile(value) ? fileState(value).lastModified : DateNow());
      } else if (!isFile(value)) {
        value = makeFile(b.bytes, b.type, "blob", DateNow());
      }
      return [name, value];
    }
    if (argc > 2) throw new TypeError(ctx + ": Argument 2 is not a Blob (a file name is only allowed with a Blob or File value).");
    return [name, toUSV(value)];
  }
  class FormData {
    #s;
    constructor(form = undefined) {
      if (form !== undefined) {
        throw new TypeError("FormData constructor: there are no HTML forms in wrepl; call new FormData() and append() the fields.");
      }
      this.#s = { __proto__: null, list: [] };
    }
    static {
      formDataState = (o) => { if (!isObject(o) || !(#s in o)) throw illegal(); return o.#s; };
    }
    append(name, value, filename = undefined) {
      const s = formDataState(this);
      needArgs("FormData.append", 2, arguments.length);
      s.list.push(formDataEntry("FormData.append", name, value, filename, arguments.length));
    }
    delete(name) {
      const s = formDataState(this);
      needArgs("FormData.delete", 1, arguments.length);
      const n = toUSV(name);
      s.list = s.list.filter((e) => e[0] !== n);
    }
    get(name) {
      const s = formDataState(this);
      needArgs("FormData.get", 1, arguments.length);
      const n = toUSV(name);
      for (let i = 0; i < s.list.length; i++) if (s.list[i][0] === n) return s.list[i][1];
      return null;
    }
    getAll(name) {
      const s = formDataState(this);
      needArgs("FormData.getAll", 1, arguments.length);
      const n = toUSV(name);
      const out = [];
      for (let i = 0; i < s.list.length; i++) if (s.list[i][0] === n) out.push(s.list[i][1]);
      return out;
    }
    has(name) {
      const s = formDataState(this);
      needArgs("FormData.has", 1, arguments.length);
      const n = toUSV(name);
      for (let i = 0; i < s.list.length; i++) if (s.list[i][0] === n) return true;
      return false;
    }
    set(name, value, filename = undefined) {
      const s = formDataState(this);
      needArgs("FormData.set", 2, arguments.length);
      const entry = formDataEntry("FormData.set", name, value, filename, arguments.length);
      const list = s.list;
      const i = list.findIndex((e) => e[0] === entry[0]);
      if (i < 0) list.push(entry);
      else {
        list[i] = entry;
        s.list = list.filter((e, k) => k <= i || e[0] !== entry[0]);
      }
    }
    forEach(callback, thisArg = undefined) {
      const s = formDataState(this);
      needArgs("FormData.forEach", 1, arguments.length);
      if (typeof callback !== "function") throw new TypeError("FormData.forEach: Argument 1 is not a function.");
      for (let i = 0; i < s.list.length; i++) ReflectApply(callback, thisArg, [s.list[i][1], s.list[i][0], this]);
    }
    entries() { const s = formDataState(this); return new FormDataIterator(() => s.list, "key+value"); }
    keys() { const s = formDataState(this); return new FormDataIterator(() => s.list, "key"); }
    values() { const s = formDataState(this); return new FormDataIterator(() => s.list, "value"); }
  }
  webidlClass(FormData, "FormData");
  ObjectDefine(FormData.prototype, Symbol.iterator, {
    value: FormData.prototype.entries, writable: true, enumerable: false, configurable: true,
  });

  // multipart/form-data, as the HTML standard encodes it (and undici does).
  const CRLF = new Uint8Array([13, 10]);
  function escapeFormName(s) { return s.replace(/\n/g, "%0A").replace(/\r/g, "%0D").replace(/"/g, "%22"); }
  function normalizeLinefeeds(s) { return s.replace(/\r?\n|\r/g, "\r\n"); }
  function encodeMultipart(list) {
    const boundary = "----formdata-wrepl-" + randomHex(24);
    const chunks = [];
    const prefix = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"";
    for (let i = 0; i < list.length; i++) {
      const name = escapeFormName(normalizeLinefeeds(list[i][0]));
      const value = list[i][1];
      if (typeof value === "string") {
        chunks.push(utf8Encode(prefix + name + "\"\r\n\r\n" + normalizeLinefeeds(value) + "\r\n"));
      } else {
        const b = blobState(value);
        chunks.push(utf8Encode(prefix + name + "\"; filename=\"" + escapeFormName(fileState(value).name) + "\"\r\n" +
          "Content-Type: " + (b.type || "application/octet-stream") + "\r\n\r\n"));
        chunks.push(b.bytes, CRLF);
      }
    }
    chunks.push(utf8Encode("--" + boundary + "--\r\n"));
    return { bytes: concatBytes(chunks), type: "multipart/form-data; boundary=" + boundary };
  }
  function unescapeFormName(s) { return s.replace(/%0A/gi, "\n").replace(/%0D/gi, "\r").replace(/%22/g, "\""); }
  function parseMultipart(bytes, boundary, ctx) {
    const fail = (why) => new TypeError(ctx + ": the multipart/form-data body could not be parsed (" + why + ").");
    const delim = utf8Encode("--" + boundary);
    const crlfDelim = concatBytes([CRLF, delim]);
    const CRLF2 = new Uint8Array([13, 10, 13, 10]);
    const out = [];
    let pos;
    if (indexOfBytes(bytes.subarray(0, delim.length), delim, 0) === 0) pos = 0;
    else {
      pos = indexOfBytes(bytes, crlfDelim, 0);
      if (pos < 0) throw fail("no boundary delimiter");
      pos += 2;
    }
    pos += delim.length;
    for (;;) {
      if (bytes[pos] === 0x2d && bytes[pos + 1] === 0x2d) return out;
      while (bytes[pos] === 0x20 || bytes[pos] === 0x09) pos++;
      if (bytes[pos] !== 13 || bytes[pos + 1] !== 10) throw fail("a delimiter is not followed by CRLF");
      const headEnd = indexOfBytes(bytes, CRLF2, pos);
      if (headEnd < 0) throw fail("a part's headers do not end");
      const head = utf8Decode(bytes.subarray(pos + 2, headEnd), false, true);
      const bodyStart = headEnd + 4;
      const next = indexOfBytes(bytes, crlfDelim, bodyStart);
      if (next < 0) throw fail("a part does not end with the boundary");
      const body = bytes.subarray(bodyStart, next);
      pos = next + crlfDelim.length;
      let name = null, filename = null, contentType = null;
      const lines = head ? head.split("\r\n") : [];
      for (let i = 0; i < lines.length; i++) {
        const c = lines[i].indexOf(":");
        if (c <= 0) throw fail("a part header has no colon");
        const hname = lines[i].slice(0, c).trim().toLowerCase();
        const hvalue = trimHttpWhitespace(lines[i].slice(c + 1));
        if (hname === "content-disposition") {
          if (!/^form-data(\s*;|\s*$)/i.test(hvalue)) throw fail("a part is not form-data");
          const re = /;\s*([^\s=;]+)\s*=\s*(?:"([^"]*)"|([^;]*))/g;
          let m;
          while ((m = re.exec(hvalue)) !== null) {
            const k = m[1].toLowerCase();
            const v = m[2] !== undefined ? unescapeFormName(m[2]) : m[3].trim();
            if (k === "name") name = v;
            else if (k === "filename") filename = v;
          }
        } else if (hname === "content-type") contentType = hvalue;
      }
      if (name === null) throw fail("a part has no name");
      if (filename !== null) out.push([name, makeFile(body.slice(), normalizeBlobType(contentType === null ? "text/plain" : contentType), filename, DateNow())]);
      else out.push([name, utf8Decode(body, false, true)]);
    }
  }

  // ---- bodies -----------------------------------------------------------------------
  // A body is { string, bytes }: a string body (sent as utf8) keeps its text and
  // gets its bytes on demand; any other body has only bytes. Never mutated.
  function stringBody(s) { return { __proto__: null, string: s, bytes: null }; }
  function bytesBody(b) { return { __proto__: null, string: null, bytes: b }; }
  function bodyBytes(b) { return b.bytes !== null ? b.bytes : (b.bytes = utf8Encode(b.string)); }
  function bodyText(b) {
    if (b.string !== null) return b.string.charCodeAt(0) === 0xfeff ? b.string.slice(1) : b.string;
    return decodeText(b.bytes);
  }
  function isReadableStream(v) {
    const RS = globalThis.ReadableStream;
    if (typeof RS === "function" && v instanceof RS) return true;
    return false;
  }
  // "extract a body": returns { body, type } (type null when none applies).
  function extractBody(v, ctx) {
    if (isBlob(v)) {
      const s = blobState(v);
      return { body: bytesBody(s.bytes), type: s.type || null };
    }
    if (isArrayBuffer(v)) return { body: bytesBody(new Uint8Array(v).slice()), type: null };
    if (ArrayBufferIsView(v)) return { body: bytesBody(viewBytes(v).slice()), type: null };
    if (isObject(v) && formDataStateOrNull(v) !== null) {
      const m = encodeMultipart(formDataState(v).list);
      return { body: bytesBody(m.bytes), type: m.type };
    }
    const USP = urlApi().URLSearchParams;
    if (typeof USP === "function" && v instanceof USP) {
      return { body: stringBody(toUSV(v.toString())), type: "application/x-www-form-urlencoded;charset=UTF-8" };
    }
    if (isReadableStream(v)) {
      throw new TypeError(ctx + ": a ReadableStream body is not supported in wrepl; " +
        "pass a string, ArrayBuffer, typed array, Blob, FormData or URLSearchParams.");
    }
    return { body: stringBody(toUSV(v)), type: "text/plain;charset=UTF-8" };
  }
  function formDataStateOrNull(v) { try { return formDataState(v); } catch (_) { return null; } }

  // The body mixin, shared by Request and Response. `state(self)` throws
  // "Illegal invocation" for a foreign object; in the async readers that is a rejection.
  function bodyGetter(s, ctx) {
    if (s.body === null) return null;
    throw new TypeError(ctx + ".body: streaming bodies (ReadableStream) are not supported in wrepl; " +
      "read the whole body with text(), json(), arrayBuffer(), blob() or bytes().");
  }
  function takeBody(s) {
    if (s.used) throw new TypeError("Body is unusable: Body has already been read");
    if (s.body !== null) s.used = true;
    return s.body;
  }
  async function readText(s) { const b = takeBody(s); return b === null ? "" : bodyText(b); }
  async function readJSON(s) { const b = takeBody(s); return JSONParse(b === null ? "" : bodyText(b)); }
  async function readArrayBuffer(s) { const b = takeBody(s); return b === null ? new ArrayBuffer(0) : bodyBytes(b).slice().buffer; }
  async function readBytes(s) { const b = takeBody(s); return b === null ? new Uint8Array(0) : bodyBytes(b).slice(); }
  async function readBlob(s) {
    const b = takeBody(s);
    const mime = extractMime(headersState(s.headers));
    return makeBlob(b === null ? new Uint8Array(0) : bodyBytes(b), mime === null ? "" : normalizeBlobType(serializeMime(mime)));
  }
  async function readFormData(s, ctx) {
    const b = takeBody(s);
    const mime = extractMime(headersState(s.headers));
    const fd = new FormData();
    const list = formDataState(fd).list;
    const ess = mime === null ? null : essence(mime);
    if (ess === "multipart/form-data") {
      const boundary = mime.params.get("boundary");
      if (!boundary) throw new TypeError(ctx + ": the multipart/form-data Content-Type has no boundary parameter.");
      const entries = parseMultipart(b === null ? new Uint8Array(0) : bodyBytes(b), boundary, ctx);
      for (let i = 0; i < entries.length; i++) list.push(entries[i]);
      return fd;
    }
    if (ess === "application/x-www-form-urlencoded") {
      const params = new (urlApi().URLSearchParams)(b === null ? "" : bodyText(b));
      for (const [k, v] of params) list.push([k, v]);
      return fd;
    }
    throw new TypeError("Content-Type was not one of \"multipart/form-data\" or \"application/x-www-form-urlencoded\".");
  }

  // ---- URLs -------------------------------------------------------------------------
  function parseURL(s, base) {
    const URLCtor = urlApi().URL;
    try { return base === undefined ? new URLCtor(s) : new URLCtor(s, base); } catch (_) { return null; }
  }
  function hrefWithoutFragment(u) {
    const h = typeof u === "string" ? u : u.href;
    const i = h.indexOf("#");
    return i < 0 ? h : h.slice(0, i);
  }

  // ---- Request ------------------------------------------------------------------------
  const NORMALIZED_METHODS = ["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"];
  const FORBIDDEN_METHODS = ["CONNECT", "TRACE", "TRACK"];
  const REFERRER_POLICIES = ["", "no-referrer", "no-referrer-when-downgrade", "same-origin", "origin",
    "strict-origin", "origin-when-cross-origin", "strict-origin-when-cross-origin", "unsafe-url"];
  // A signal that follows `parent` (null: a signal that never aborts by itself).
  function followingSignal(parent) {
    const ev = eventsApi();
    const controller = new ev.AbortController();
    let unfollow = null;
    if (parent !== null) {
      if (parent.aborted) controller.abort(parent.reason);
      else unfollow = ev.__addAbortAlgorithm(parent, () => controller.abort(parent.reason));
    }
    return { signal: controller.signal, unfollow };
  }
  let requestState, newRequestObject;
  class Request {
    #s;
    constructor(input, init = undefined) {
      const ctx = "Request constructor";
      needArgs(ctx, 1, arguments.length);
      let base = null;
      let url;
      if (isObject(input) && requestStateOrNull(input) !== null) {
        base = requestState(input);
        url = base.url;
      } else {
        const text = toUSV(input);
        const parsed = parseURL(text);
        if (parsed === null) {
          throw new TypeError("Failed to parse URL from " + text +
            " (fetch in wrepl has no base URL: give an absolute http: or https: URL)");
        }
        if (parsed.username !== "" || parsed.password !== "") {
          throw new TypeError("Request cannot be constructed from a URL that includes credentials: " + text);
        }
        url = parsed.href;
      }
      const d = dictionary(init, ctx);
      // Members are read once each, in WebIDL dictionary (alphabetical) order.
      const initBody = member(d, "body");
      const cacheRaw = member(d, "cache");
      const credentialsRaw = member(d, "credentials");
      const duplexRaw = member(d, "duplex");
      const headersInit = member(d, "headers");
      const integrityRaw = member(d, "integrity");
      const keepaliveRaw = member(d, "keepalive");
      const methodRaw = member(d, "method");
      const modeRaw = member(d, "mode");
      member(d, "priority");
      const redirectRaw = member(d, "redirect");
      const referrerRaw = member(d, "referrer");
      const referrerPolicyRaw = member(d, "referrerPolicy");
      const hasSignal = d !== null && d.signal !== undefined;
      const signalInit = hasSignal ? d.signal : undefined;
      const windowInit = member(d, "window");

      const s = {
        __proto__: null,
        url,
        method: base ? base.method : "GET",
        headers: null,
        body: null,
        used: false,
        redirect: base ? base.redirect : "follow",
        mode: base ? base.mode : "cors",
        credentials: base ? base.credentials : "same-origin",
        cache: base ? base.cache : "default",
        referrer: base ? base.referrer : "client",
        referrerPolicy: base ? base.referrerPolicy : "",
        integrity: base ? base.integrity : "",
        keepalive: base ? base.keepalive : false,
        signal: null,
        unfollow: null,
      };
      if (windowInit !== undefined && windowInit !== null) throw new TypeError("'window' option '" + String(windowInit) + "' must be null");
      if (referrerRaw !== undefined) {
        const r = toUSV(referrerRaw);
        if (r === "") s.referrer = "no-referrer";
        else {
          const ru = parseURL(r);
          if (ru === null) throw new TypeError(ctx + ": referrer " + JSONStringify(r) + " is not a valid absolute URL.");
          s.referrer = ru.href === "about:client" ? "client" : ru.href;
        }
      }
      if (referrerPolicyRaw !== undefined) s.referrerPolicy = toEnum(ctx, "referrerPolicy", referrerPolicyRaw, REFERRER_POLICIES);
      if (modeRaw !== undefined) {
        const m = toEnum(ctx, "mode", modeRaw, ["same-origin", "no-cors", "cors", "navigate"]);
        if (m === "navigate") throw new TypeError(ctx + ": invalid request mode navigate.");
        s.mode = m;
      }
      if (credentialsRaw !== undefined) s.credentials = toEnum(ctx, "credentials", credentialsRaw, ["omit", "same-origin", "include"]);
      if (cacheRaw !== undefined) {
        s.cache = toEnum(ctx, "cache", cacheRaw, ["default", "no-store", "reload", "no-cache", "force-cache", "only-if-cached"]);
      }
      if (s.cache === "only-if-cached" && s.mode !== "same-origin") {
        throw new TypeError("'only-if-cached' can be set only with 'same-origin' mode");
      }
      if (redirectRaw !== undefined) s.redirect = toEnum(ctx, "redirect", redirectRaw, ["follow", "error", "manual"]);
      if (integrityRaw !== undefined) s.integrity = str(integrityRaw);
      if (keepaliveRaw !== undefined) s.keepalive = !!keepaliveRaw;
      if (methodRaw !== undefined) {
        let m = toByteString(methodRaw);
        if (!isToken(m)) throw new TypeError("'" + m + "' is not a valid HTTP method.");
        const upper = m.toUpperCase();
        if (FORBIDDEN_METHODS.includes(upper)) throw new TypeError("'" + m + "' HTTP method is unsupported.");
        if (NORMALIZED_METHODS.includes(upper)) m = upper;
        s.method = m;
      }
      if (duplexRaw !== undefined) toEnum(ctx, "duplex", duplexRaw, ["half"]);
      let parentSignal = base ? base.signal : null;
      if (hasSignal) {
        const AS = eventsApi().AbortSignal;
        if (signalInit !== null && !(signalInit instanceof AS)) {
          throw new TypeError("Failed to construct 'Request': member signal is not of type AbortSignal.");
        }
        parentSignal = signalInit;
      }
      const follow = followingSignal(parentSignal);
      s.signal = follow.signal;
      s.unfollow = follow.unfollow;
      if (s.mode === "no-cors" && s.method !== "GET" && s.method !== "HEAD" && s.method !== "POST") {
        throw new TypeError("'" + s.method + "' is unsupported in no-cors mode.");
      }
      // Headers: a copy of the input's, or init.headers.
      const headers = newHeaders("request");
      const hs = headersState(headers);
      if (headersInit !== undefined) fillHeaders(hs, headersInit, ctx);
      else if (base !== null) {
        const bl = headersState(base.headers).list;
        for (let i = 0; i < bl.length; i++) hs.list.push([bl[i][0], bl[i][1]]);
      }
      s.headers = headers;
      const inputBody = base ? base.body : null;
      const hasInitBody = initBody !== undefined && initBody !== null;
      if ((hasInitBody || inputBody !== null) && (s.method === "GET" || s.method === "HEAD")) {
        throw new TypeError("Request with GET/HEAD method cannot have body.");
      }
      if (hasInitBody) {
        const x = extractBody(initBody, ctx);
        s.body = x.body;
        if (x.type !== null && !headersHas(hs, "content-type")) hs.list.push(["content-type", x.type]);
      } else if (inputBody !== null) {
        if (base.used) throw new TypeError("Cannot construct a Request with a Request object that has already been used.");
        s.body = inputBody;
        base.used = true; // the input's body moves into the new Request
      }
      this.#s = s;
    }
    static {
      requestState = (o) => { if (!isObject(o) || !(#s in o)) throw illegal(); return o.#s; };
      newRequestObject = (s) => { const r = new Request("about:blank"); r.#s = s; return r; };
    }
    get method() { return requestState(this).method; }
    get url() { return requestState(this).url; }
    get headers() { return requestState(this).headers; }
    get destination() { requestState(this); return ""; }
    get referrer() {
      const r = requestState(this).referrer;
      return r === "no-referrer" ? "" : r === "client" ? "about:client" : r;
    }
    get referrerPolicy() { return requestState(this).referrerPolicy; }
    get mode() { return requestState(this).mode; }
    get credentials() { return requestState(this).credentials; }
    get cache() { return requestState(this).cache; }
    get redirect() { return requestState(this).redirect; }
    get integrity() { return requestState(this).integrity; }
    get keepalive() { return requestState(this).keepalive; }
    get isReloadNavigation() { requestState(this); return false; }
    get isHistoryNavigation() { requestState(this); return false; }
    get signal() { return requestState(this).signal; }
    get duplex() { requestState(this); return "half"; }
    get body() { return bodyGetter(requestState(this), "Request"); }
    get bodyUsed() { return requestState(this).used; }
    clone() {
      const s = requestState(this);
      if (s.used) throw new TypeError("Request.clone: Body has already been consumed.");
      const c = { __proto__: null };
      for (const k in s) c[k] = s[k];
      c.headers = copyHeaders(s.headers);
      const follow = followingSignal(s.signal);
      c.signal = follow.signal;
      c.unfollow = follow.unfollow;
      return newRequestObject(c);
    }
    arrayBuffer() { return callReader(readArrayBuffer, requestState, this); }
    blob() { return callReader(readBlob, requestState, this); }
    bytes() { return callReader(readBytes, requestState, this); }
    formData() { return callReader(readFormData, requestState, this, "Request.formData"); }
    json() { return callReader(readJSON, requestState, this); }
    text() { return callReader(readText, requestState, this); }
  }
  webidlClass(Request, "Request");
  function requestStateOrNull(o) { try { return requestState(o); } catch (_) { return null; } }
  function callReader(reader, getState, self, ctx) {
    let s;
    try { s = getState(self); } catch (e) { return PromiseCtor.reject(e); }
    return reader(s, ctx);
  }

  // ---- Response ------------------------------------------------------------------------
  const NULL_BODY_STATUS = [101, 103, 204, 205, 304];
  const REDIRECT_STATUS = [301, 302, 303, 307, 308];
  let responseState, newResponseObject;
  function initResponse(s, init, ctx) {
    const d = dictionary(init, ctx);
    const headersInit = member(d, "headers");
    const statusRaw = member(d, "status");
    const statusTextRaw = member(d, "statusText");
    const status = statusRaw === undefined ? 200 : toUnsignedShort(statusRaw);
    const statusText = statusTextRaw === undefined ? "" : toByteString(statusTextRaw);
    if (status < 200 || status > 599) throw new RangeError("init[\"status\"] must be in the range of 200 to 599, inclusive.");
    if (!REASON_PHRASE.test(statusText)) throw new TypeError("Invalid statusText");
    s.status = status;
    s.statusText = statusText;
    if (headersInit !== undefined) fillHeaders(headersState(s.headers), headersInit, ctx);
  }
  function responseRecord(type) {
    return {
      __proto__: null, type, status: 200, statusText: "", headers: newHeaders("response"),
      body: null, used: false, urlList: [],
    };
  }
  class Response {
    #s;
    constructor(body = null, init = undefined) {
      const ctx = "Response constructor";
      const s = responseRecord("default");
      initResponse(s, init, ctx);
      if (body !== null && body !== undefined) {
        if (NULL_BODY_STATUS.includes(s.status)) throw new TypeError(ctx + ": Invalid response status code " + s.status);
        const x = extractBody(body, ctx);
        s.body = x.body;
        const hs = headersState(s.headers);
        if (x.type !== null && !headersHas(hs, "content-type")) hs.list.push(["content-type", x.type]);
      }
      this.#s = s;
    }
    static {
      responseState = (o) => { if (!isObject(o) || !(#s in o)) throw illegal(); return o.#s; };
      newResponseObject = (s) => { const r = new Response(); r.#s = s; return r; };
    }
    static error() {
      const s = responseRecord("error");
      s.status = 0;
      headersState(s.headers).guard = "immutable";
      return newResponseObject(s);
    }
    static redirect(url, status = 302) {
      needArgs("Response.redirect", 1, arguments.length);
      const text = toUSV(url);
      const parsed = parseURL(text);
      if (parsed === null) throw new TypeError("Failed to parse URL from " + text + " (Response.redirect needs an absolute URL in wrepl)");
      const code = toUnsignedShort(status);
      if (!REDIRECT_STATUS.includes(code)) throw new RangeError("Invalid status code " + code);
      const s = responseRecord("default");
      s.status = code;
      const hs = headersState(s.headers);
      hs.list.push(["location", parsed.href]);
      hs.guard = "immutable";
      return newResponseObject(s);
    }
    static json(data, init = undefined) {
      needArgs("Response.json", 1, arguments.length);
      const text = JSONStringify(data);
      if (text === undefined) throw new TypeError("Value is not JSON serializable");
      const s = responseRecord("default");
      initResponse(s, init, "Response.json");
      if (NULL_BODY_STATUS.includes(s.status)) throw new TypeError("Response.json: Invalid response status code " + s.status);
      s.body = stringBody(toUSV(text));
      const hs = headersState(s.headers);
      if (!headersHas(hs, "content-type")) hs.list.push(["content-type", "application/json"]);
      return newResponseObject(s);
    }
    get type() { return responseState(this).type; }
    get url() {
      const l = responseState(this).urlList;
      return l.length ? hrefWithoutFragment(l[l.length - 1]) : "";
    }
    get redirected() { return responseState(this).urlList.length > 1; }
    get status() { return responseState(this).status; }
    get ok() { const st = responseState(this).status; return st >= 200 && st <= 299; }
    get statusText() { return responseState(this).statusText; }
    get headers() { return responseState(this).headers; }
    get body() { return bodyGetter(responseState(this), "Response"); }
    get bodyUsed() { return responseState(this).used; }
    clone() {
      const s = responseState(this);
      if (s.used) throw new TypeError("Response.clone: Body has already been consumed.");
      const c = responseRecord(s.type);
      c.status = s.status;
      c.statusText = s.statusText;
      c.headers = copyHeaders(s.headers);
      c.body = s.body;
      c.urlList = s.urlList.slice();
      return newResponseObject(c);
    }
    arrayBuffer() { return callReader(readArrayBuffer, responseState, this); }
    blob() { return callReader(readBlob, responseState, this); }
    bytes() { return callReader(readBytes, responseState, this); }
    formData() { return callReader(readFormData, responseState, this, "Response.formData"); }
    json() { return callReader(readJSON, responseState, this); }
    text() { return callReader(readText, responseState, this); }
  }
  webidlClass(Response, "Response");

  // ---- fetch ----------------------------------------------------------------------------
  const DEFAULT_HEADERS = [["accept", "*/*"], ["user-agent", "wrepl"]];
  // Framing and hop-by-hop headers belong to the host's HTTP client (which
  // refuses them in a WebFetch input): like a browser with these forbidden
  // request-headers, fetch leaves them out instead of failing the request.
  // `host` and `proxy-*` are sent, so the host's refusal explains itself.
  const CLIENT_OWNED = ["connection", "content-length", "expect", "http2-settings", "keep-alive", "proxy-connection",
    "te", "trailer", "transfer-encoding", "upgrade"];
  const CROSS_ORIGIN_DROPPED = ["authorization", "cookie", "proxy-authorization"];

  function errorMessage(e) {
    try { return e && typeof e.message === "string" ? e.message : String(e); } catch (_) { return "unknown error"; }
  }
  function fetchFailed(message, cause) {
    return cause === undefined ? new TypeError("fetch failed: " + message) : new TypeError("fetch failed: " + message, { cause });
  }
  // One WebFetch exchange, abandoned (cancel()) when `signal` aborts.
  function exchange(input, signal) {
    return new PromiseCtor((resolve, reject) => {
      let pair;
      try { pair = startCall("WebFetch", input); } catch (e) {
        reject(fetchFailed(errorMessage(e), e));
        return;
      }
      const promise = pair[0], cancel = pair[1];
      let settled = false, remove = null;
      const onAbort = () => {
        if (settled) return;
        settled = true;
        try { cancel(); } catch (_) { /* the call is gone either way */ }
        reject(signal.reason);
      };
      remove = eventsApi().__addAbortAlgorithm(signal, onAbort);
      PromiseCtor.resolve(promise).then((r) => {
        if (settled) return;
        settled = true;
        if (typeof remove === "function") remove();
        resolve(r);
      }, (e) => {
        if (settled) return;
        settled = true;
        if (typeof remove === "function") remove();
        reject(fetchFailed(errorMessage(e), e));
      });
    });
  }
  function malformed(why) { return fetchFailed("the WebFetch tool returned a malformed result (" + why + ")"); }
  // Validates the tool's result and turns it into { status, statusText, headerList, body }.
  function readResult(r, method) {
    if (!isObject(r)) throw malformed("not an object");
    const status = r.status;
    if (typeof status !== "number" || !(status >= 100 && status <= 999) || status !== Math.trunc(status)) throw malformed("status " + String(status));
    const statusText = typeof r.statusText === "string" ? r.statusText : "";
    const rawHeaders = r.headers;
    if (!Array.isArray(rawHeaders)) throw malformed("headers is not an array");
    const list = [];
    for (let i = 0; i < rawHeaders.length; i++) {
      const p = rawHeaders[i];
      if (!Array.isArray(p) || typeof p[0] !== "string" || typeof p[1] !== "string") throw malformed("header " + i + " is not a [name, value] pair of strings");
      list.push([p[0].toLowerCase(), p[1]]);
    }
    let body = null;
    if (method !== "HEAD" && !NULL_BODY_STATUS.includes(status)) {
      const text = r.body === undefined || r.body === null ? "" : r.body;
      if (typeof text !== "string") throw malformed("body is not a string");
      if (r.bodyEncoding === "base64") {
        let bytes;
        try { bytes = base64Decode(text); } catch (e) { throw malformed("body is not valid base64"); }
        body = bytesBody(bytes);
      } else if (r.bodyEncoding === "utf8" || r.bodyEncoding === undefined) {
        body = stringBody(text);
      } else throw malformed("bodyEncoding " + String(r.bodyEncoding));
    }
    return { status, statusText, list, body };
  }
  function fetchedResponse(x, urlList) {
    const s = responseRecord("basic");
    s.status = x.status;
    s.statusText = x.statusText;
    const hs = headersState(s.headers);
    hs.list = x.list;
    hs.guard = "immutable";
    s.body = x.body;
    s.urlList = urlList;
    return newResponseObject(s);
  }

  // data: URLs are answered here, without a tool call (https://fetch.spec.whatwg.org/#data-urls).
  function percentDecodeBytes(str) {
    const b = utf8Encode(str);
    const out = new Uint8Array(b.length);
    let n = 0;
    const hex = (c) => (c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1);
    for (let i = 0; i < b.length; i++) {
      if (b[i] === 37 && i + 2 < b.length && hex(b[i + 1]) >= 0 && hex(b[i + 2]) >= 0) {
        out[n++] = hex(b[i + 1]) * 16 + hex(b[i + 2]);
        i += 2;
      } else out[n++] = b[i];
    }
    return out.subarray(0, n);
  }
  function forgivingBase64(s) {
    s = s.replace(/[\t\n\f\r ]+/g, "");
    if (s.length % 4 === 0) s = s.replace(/={1,2}$/, "");
    if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) return null;
    while (s.length % 4) s += "=";
    try { return base64Decode(s); } catch (_) { return null; }
  }
  function fetchDataURL(u) {
    const input = hrefWithoutFragment(u).slice(5);
    const comma = input.indexOf(",");
    if (comma < 0) throw fetchFailed("invalid data: URL (no comma)");
    let mimeType = input.slice(0, comma).replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, "");
    let bytes = percentDecodeBytes(input.slice(comma + 1));
    const m = /;[\x20]*base64$/i.exec(mimeType);
    if (m !== null) {
      mimeType = mimeType.slice(0, m.index);
      bytes = forgivingBase64(latin1(bytes));
      if (bytes === null) throw fetchFailed("invalid data: URL (bad base64)");
    }
    if (mimeType.startsWith(";")) mimeType = "text/plain" + mimeType;
    const parsed = parseMime(mimeType);
    const type = parsed === null ? "text/plain;charset=US-ASCII" : serializeMime(parsed);
    return fetchedResponse({ status: 200, statusText: "OK", list: [["content-type", type]], body: bytesBody(bytes) }, [u.href]);
  }

  async function fetch(input, init = undefined) {
    needArgs("fetch", 1, arguments.length);
    const request = new Request(input, init);
    const rs = requestState(request);
    try {
      return await runFetch(rs);
    } finally {
      // The Request made here is not visible to the script: stop following its parent signal.
      if (typeof rs.unfollow === "function") rs.unfollow();
    }
  }
  async function runFetch(rs) {
    const signal = rs.signal;
    if (signal.aborted) throw signal.reason;
    let url = parseURL(rs.url);
    if (url.protocol === "data:") return fetchDataURL(url);
    let method = rs.method;
    let body = rs.body;
    const headerList = headersState(rs.headers).list.map((p) => [p[0], p[1]]);
    const urlList = [url.href];
    let redirects = 0;
    for (;;) {
      if (url.protocol !== "http:" && url.protocol !== "https:") {
        throw fetchFailed("unsupported URL scheme " + JSONStringify(url.protocol) + " in " + url.href +
          " (WebFetch fetches http: and https: URLs; data: URLs are decoded locally)");
      }
      const sent = [];
      for (let i = 0; i < headerList.length; i++) {
        if (!CLIENT_OWNED.includes(headerList[i][0])) sent.push([headerList[i][0], headerList[i][1]]);
      }
      for (let i = 0; i < DEFAULT_HEADERS.length; i++) {
        if (!sent.some((p) => p[0] === DEFAULT_HEADERS[i][0])) sent.push([DEFAULT_HEADERS[i][0], DEFAULT_HEADERS[i][1]]);
      }
      const toolInput = { url: hrefWithoutFragment(url), method: method.toUpperCase(), headers: sent };
      if (body !== null) {
        if (body.string !== null) { toolInput.body = body.string; toolInput.bodyEncoding = "utf8"; }
        else { toolInput.body = base64Encode(body.bytes); toolInput.bodyEncoding = "base64"; }
      }
      const x = readResult(await exchange(toolInput, signal), method.toUpperCase());
      const location = REDIRECT_STATUS.includes(x.status) ? firstValue(x.list, "location") : null;
      if (location === null || rs.redirect === "manual") return fetchedResponse(x, urlList);
      const next = parseURL(location, url.href);
      if (next === null) throw fetchFailed(url.href + " answered " + x.status + " with an invalid Location " + JSONStringify(location));
      if (rs.redirect === "error") {
        throw fetchFailed(url.href + " answered " + x.status + " redirecting to " + next.href +
          " and the request's redirect mode is \"error\" (use redirect: \"follow\" or \"manual\")");
      }
      if (redirects === 20) throw fetchFailed("too many redirects (more than 20)");
      redirects++;
      if (next.protocol !== "http:" && next.protocol !== "https:") {
        throw fetchFailed(url.href + " redirected to " + next.href + ", which is not an http: or https: URL");
      }
      if (next.hash === "" && url.hash !== "" && !next.href.endsWith("#")) next.hash = url.hash;
      if (((x.status === 301 || x.status === 302) && method === "POST") ||
        (x.status === 303 && method !== "GET" && method !== "HEAD")) {
        method = "GET";
        body = null;
        removeWhere(headerList, (n) => n.startsWith("content-"));
      }
      if (next.origin !== url.origin) removeWhere(headerList, (n) => CROSS_ORIGIN_DROPPED.includes(n));
      url = next;
      urlList.push(url.href);
      if (signal.aborted) throw signal.reason;
    }
  }
  function firstValue(list, name) {
    for (let i = 0; i < list.length; i++) if (list[i][0] === name) return list[i][1];
    return null;
  }
  function removeWhere(list, pred) {
    let w = 0;
    for (let r = 0; r < list.length; r++) if (!pred(list[r][0])) list[w++] = list[r];
    list.length = w;
  }

  return { fetch, Headers, Request, Response, Blob, File, FormData };
})
