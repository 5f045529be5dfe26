// Tests for guest-js/src/platform/fetch.js, run by node (no Rust build):
//   node --test guest-js/tests/platform/fetch.test.mjs
// The file is evaluated in a fresh vm context (no fetch/Headers/Request/
// Response/Blob/File/FormData there) with a fake `platform` whose startCall
// performs each WebFetch exchange against a local node:http server, without
// following redirects, as the host does. Where node has the same class, the
// behaviour is compared with node's own (undici).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import vm from "node:vm";
import fs from "node:fs";
import path from "node:path";
import { getEventListeners } from "node:events";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const SRC_PATH = path.resolve(here, "../../src/platform/fetch.js");
const SRC = fs.readFileSync(SRC_PATH, "utf8");

// ---- fake platform ------------------------------------------------------------
const calls = []; // every WebFetch input, as sent
let cancels = 0;
let denyPattern = null;

function toolError(kind, message) {
  const e = new Error(message);
  e.name = "ToolError";
  e.tool = "WebFetch";
  e.kind = kind;
  return e;
}

const HOST_FORBIDDEN = ["host", "connection", "content-length", "transfer-encoding", "te", "trailer", "upgrade",
  "keep-alive", "expect", "proxy-authorization", "proxy-connection", "http2-settings"];
// Checks a WebFetch input against the tool contract; returns an error text or null.
function contractError(input) {
  if (typeof input !== "object" || input === null) return "input is not an object";
  const allowed = new Set(["url", "method", "headers", "body", "bodyEncoding"]);
  for (const k of Object.keys(input)) if (!allowed.has(k)) return "unexpected key " + k;
  if (typeof input.url !== "string" || !/^https?:\/\//.test(input.url)) return "url is not absolute http(s)";
  if (input.url.includes("#")) return "url has a fragment";
  if (typeof input.method !== "string" || !/^[!#$%&'*+\-.^_`|~0-9A-Z]+$/.test(input.method)) return "method is not an uppercase token";
  if (!Array.isArray(input.headers)) return "headers is not an array";
  for (const p of input.headers) {
    if (!Array.isArray(p) || p.length !== 2 || typeof p[0] !== "string" || typeof p[1] !== "string") return "bad header pair";
    if (/[\r\n\0]/.test(p[0] + p[1])) return "header with CR/LF/NUL";
    // As host/src/tools/web.rs refuses them.
    if (HOST_FORBIDDEN.includes(p[0].toLowerCase()) || p[0].toLowerCase().startsWith("proxy-")) {
      return "the request header " + JSON.stringify(p[0]) + " may not be set (it is the client's own)";
    }
  }
  if ("body" in input) {
    if (typeof input.body !== "string") return "body is not a string";
    if (input.bodyEncoding !== "utf8" && input.bodyEncoding !== "base64") return "bad bodyEncoding";
    if (input.method === "GET" || input.method === "HEAD") return "GET/HEAD with a body";
  } else if ("bodyEncoding" in input) return "bodyEncoding without body";
  return null;
}

function realStartCall(name, input) {
  let req = null;
  let cancelled = false;
  const promise = new Promise((resolve, reject) => {
    if (name !== "WebFetch") return reject(toolError("invalid-input", "unknown tool " + name));
    const bad = contractError(input);
    if (bad) return reject(toolError("invalid-input", "WebFetch input: " + bad));
    if (denyPattern !== null && input.url.includes(denyPattern)) {
      return reject(toolError("denied", "WebFetch(" + input.url + ") is not allowed: add the permission rule " +
        "\"WebFetch(domain:127.0.0.1)\" to the sandbox's allow list"));
    }
    const u = new URL(input.url);
    const flat = [];
    for (const [k, v] of input.headers) flat.push(k, v);
    // What the host's HTTP client adds.
    if (!input.headers.some(([k]) => k === "host")) flat.push("host", u.host);
    const payload = "body" in input ? Buffer.from(input.body, input.bodyEncoding === "base64" ? "base64" : "utf8") : null;
    if (payload !== null) flat.push("content-length", String(payload.length));
    req = http.request({ hostname: u.hostname, port: u.port, path: u.pathname + u.search, method: input.method, headers: flat });
    req.on("response", (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        if (cancelled) return;
        const buf = Buffer.concat(chunks);
        const headers = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) headers.push([res.rawHeaders[i].toLowerCase(), res.rawHeaders[i + 1]]);
        let body, bodyEncoding;
        try {
          body = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(buf);
          bodyEncoding = "utf8";
        } catch {
          body = buf.toString("base64");
          bodyEncoding = "base64";
        }
        resolve({ url: input.url, status: res.statusCode, statusText: res.statusMessage, headers, body, bodyEncoding });
      });
    });
    req.on("error", (e) => { if (!cancelled) reject(toolError("failed", "WebFetch(" + input.url + ") failed: " + e.message)); });
    if (payload !== null) req.end(payload);
    else req.end();
  });
  // Per the contract, a cancelled call's promise never settles.
  return [promise, () => { cancelled = true; cancels++; if (req) req.destroy(); }];
}
let startCallImpl = realStartCall;

const platform = {
  // Like the native: the text must be well-formed (the caller replaces lone surrogates).
  utf8Encode: (s) => {
    if (typeof s !== "string" || !s.isWellFormed()) throw new TypeError("utf8Encode: not a well-formed string");
    return new TextEncoder().encode(s);
  },
  utf8Decode: (u8, fatal, ignoreBOM) => new TextDecoder("utf-8", { fatal: !!fatal, ignoreBOM: !!ignoreBOM }).decode(u8),
  base64Encode: (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString("base64"),
  base64Decode: (s) => {
    if (s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) throw new TypeError("invalid base64");
    return new Uint8Array(Buffer.from(s, "base64"));
  },
  startCall: (name, input) => {
    calls.push(structuredClone(input));
    return startCallImpl(name, input);
  },
};

function addAbortAlgorithm(signal, fn) {
  const h = () => fn();
  signal.addEventListener("abort", h, { once: true });
  return () => signal.removeEventListener("abort", h);
}
const modules = {
  url: { URL, URLSearchParams },
  encoding: { TextEncoder, TextDecoder },
  events: { AbortSignal, AbortController, Event, EventTarget, __addAbortAlgorithm: addAbortAlgorithm },
};
const loaded = [];
function load(name) {
  loaded.push(name);
  if (!(name in modules)) throw new Error("no platform module " + name);
  return modules[name];
}

const context = vm.createContext({ console, queueMicrotask, setTimeout, DOMException });
for (const k of ["fetch", "Headers", "Request", "Response", "Blob", "File", "FormData"]) delete context[k];
const factory = vm.runInContext(SRC, context, { filename: SRC_PATH });
const W = factory(platform, load);
const { fetch: wfetch, Headers: WHeaders, Request: WRequest, Response: WResponse, Blob: WBlob, File: WFile, FormData: WFormData } = W;

// ---- helpers -------------------------------------------------------------------
const plain = (v) => JSON.parse(JSON.stringify(v));
function err(f) {
  try { f(); return null; } catch (e) { return e.name + ": " + e.message; }
}
async function aerr(p) {
  try { await p; return null; } catch (e) { return e.name + ": " + e.message; }
}
async function caught(p) {
  try { await p; } catch (e) { return e; }
  assert.fail("expected a rejection");
}
const bytesOf = (u8) => Array.from(u8);

// ---- servers ---------------------------------------------------------------------
let server, server2, base, base2;
const waiters = new Map();
function waitFor(pathname) {
  return new Promise((resolve) => waiters.set(pathname, resolve));
}
const held = new Set();

function route(req, res, u, body, port) {
  const notify = waiters.get(u.pathname);
  if (notify) { waiters.delete(u.pathname); notify({ req, res }); }
  const p = u.pathname;
  if (p === "/text") {
    res.writeHead(200, { "content-type": "text/plain;charset=utf-8" });
    return res.end("hello wrepl \u2713");
  }
  if (p === "/bom") {
    res.writeHead(200, { "content-type": "text/plain" });
    return res.end("\uFEFFbom!");
  }
  if (p === "/json") {
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify({ a: 1, b: [true, null, "x\u00e9"] }));
  }
  if (p === "/bin") {
    const b = Buffer.alloc(256);
    for (let i = 0; i < 256; i++) b[i] = i;
    res.writeHead(200, { "content-type": "application/octet-stream" });
    return res.end(b);
  }
  if (p === "/echo") {
    const headers = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i].toLowerCase(), req.rawHeaders[i + 1]]);
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify({ method: req.method, path: req.url, port, headers, body: body.toString("base64") }));
  }
  if (p === "/cookies") {
    res.writeHead(200, [["Set-Cookie", "a=1; Path=/"], ["X-Multi", "1"], ["Set-Cookie", "b=2"], ["X-Multi", "2"], ["Content-Type", "text/plain"]].flat());
    return res.end("cookies");
  }
  if (p === "/redirect") {
    const status = Number(u.searchParams.get("status") || 302);
    res.writeHead(status, { location: u.searchParams.get("to") });
    return res.end("redirecting");
  }
  if (p.startsWith("/chain/")) {
    const n = Number(p.slice(7));
    if (n > 0) { res.writeHead(302, { location: "/chain/" + (n - 1) }); return res.end(); }
    res.writeHead(200, { "content-type": "text/plain" });
    return res.end("end of chain");
  }
  if (p === "/rel/a/b") {
    res.writeHead(301, { location: "../../text?from=rel" });
    return res.end();
  }
  if (p === "/nolocation") {
    res.writeHead(302, { "content-type": "text/plain" });
    return res.end("no location");
  }
  if (p === "/nocontent") {
    res.writeHead(204);
    return res.end();
  }
  if (p === "/teapot") {
    res.writeHead(418, "I'm a teapot", { "content-type": "text/plain" });
    return res.end("short and stout");
  }
  if (p === "/multipart") {
    const fd = new FormData();
    fd.append("field", "value \u00e9");
    fd.append("upload", new Blob([new Uint8Array([0, 1, 2, 255])], { type: "application/x-thing" }), "data.bin");
    const r = new Response(fd);
    return r.arrayBuffer().then((ab) => {
      res.writeHead(200, { "content-type": r.headers.get("content-type") });
      res.end(Buffer.from(ab));
    });
  }
  if (p === "/form-echo") {
    // Parses the request body with node's own multipart/urlencoded parser.
    const r = new Response(body, { headers: { "content-type": req.headers["content-type"] || "" } });
    return r.formData().then(async (fd) => {
      const out = [];
      for (const [k, v] of fd) {
        out.push(typeof v === "string" ? [k, v] : [k, { name: v.name, type: v.type, bytes: Array.from(new Uint8Array(await v.arrayBuffer())) }]);
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(out));
    }, (e) => { res.writeHead(400); res.end(String(e)); });
  }
  if (p === "/slow") {
    held.add(res);
    res.on("close", () => held.delete(res));
    return; // never answers
  }
  res.writeHead(404);
  res.end("not found");
}
function makeServer(portRef) {
  return http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => route(req, res, new URL(req.url, "http://x"), Buffer.concat(chunks), portRef()));
  });
}
before(async () => {
  server = makeServer(() => server.address().port);
  server2 = makeServer(() => server2.address().port);
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  await new Promise((r) => server2.listen(0, "127.0.0.1", r));
  base = "http://127.0.0.1:" + server.address().port;
  base2 = "http://127.0.0.1:" + server2.address().port;
});
after(() => {
  for (const res of held) res.destroy();
  server.closeAllConnections();
  server2.closeAllConnections();
  server.close();
  server2.close();
});
async function echo(res) {
  const j = await res.json();
  const h = {};
  for (const [k, v] of j.headers) h[k] = h[k] === undefined ? v : h[k] + ", " + v;
  return { ...j, h, text: Buffer.from(j.body, "base64").toString("utf8"), bytes: Array.from(Buffer.from(j.body, "base64")) };
}

// ---- the file and its globals ------------------------------------------------------
test("the file is one function expression returning the seven globals", () => {
  assert.equal(typeof factory, "function");
  assert.equal(factory.length, 2);
  assert.match(SRC, /^\/\/.*\n/);
  assert.match(SRC.trimEnd(), /\}\)$/);
  assert.deepEqual(Object.keys(W).sort(), ["Blob", "File", "FormData", "Headers", "Request", "Response", "fetch"]);
  for (const k of ["fetch", "Headers", "Request", "Response", "Blob", "File", "FormData"]) assert.equal(context[k], undefined);
  assert.equal(wfetch.length, 1);
  assert.equal(wfetch.name, "fetch");
  const tags = {
    Headers: new WHeaders(), Request: new WRequest("http://x/"), Response: new WResponse(), Blob: new WBlob(),
    File: new WFile([], "f"), FormData: new WFormData(),
  };
  for (const [tag, obj] of Object.entries(tags)) {
    assert.equal(Object.prototype.toString.call(obj), "[object " + tag + "]");
    assert.equal(Object.prototype.toString.call(obj), Object.prototype.toString.call(tag === "Request" ? new Request("http://x/") : new globalThis[tag](...(tag === "File" ? [[], "f"] : []))));
  }
  assert.equal(Object.prototype.toString.call(new WHeaders().entries()), "[object Headers Iterator]");
  assert.equal(Object.prototype.toString.call(new WFormData().keys()), "[object FormData Iterator]");
  assert.ok(new WFile([], "x") instanceof WBlob);
  // Same own prototype members as node's classes (Request's "attribute" is an undici oddity).
  const names = (C) => Object.getOwnPropertyNames(C.prototype).filter((n) => n !== "attribute").sort();
  assert.deepEqual(names(WHeaders), names(Headers));
  assert.deepEqual(names(WResponse), names(Response));
  assert.deepEqual(names(WRequest), names(Request));
  assert.deepEqual(names(WBlob), names(Blob));
  assert.deepEqual(names(WFile), names(File));
  assert.deepEqual(names(WFormData), names(FormData));
  assert.equal(Object.getOwnPropertyDescriptor(WHeaders.prototype, "get").enumerable, true);
  assert.equal(WHeaders.prototype[Symbol.iterator], WHeaders.prototype.entries);
  assert.equal(WFormData.prototype[Symbol.iterator], WFormData.prototype.entries);
});

test("brand checks throw Illegal invocation (readers reject)", async () => {
  assert.equal(err(() => WHeaders.prototype.get.call({}, "a")), "TypeError: Illegal invocation");
  assert.equal(err(() => WHeaders.prototype.get.call(new WResponse(), "a")), "TypeError: Illegal invocation");
  assert.equal(err(() => Object.getOwnPropertyDescriptor(WResponse.prototype, "status").get.call({})), "TypeError: Illegal invocation");
  assert.equal(err(() => Object.getOwnPropertyDescriptor(WResponse.prototype, "status").get.call(new WRequest("http://x/"))), "TypeError: Illegal invocation");
  assert.equal(err(() => WResponse.prototype.clone.call(5)), "TypeError: Illegal invocation");
  assert.equal(err(() => Object.getOwnPropertyDescriptor(WRequest.prototype, "url").get.call(null)), "TypeError: Illegal invocation");
  assert.equal(err(() => Object.getOwnPropertyDescriptor(WBlob.prototype, "size").get.call({})), "TypeError: Illegal invocation");
  assert.equal(err(() => Object.getOwnPropertyDescriptor(WFile.prototype, "name").get.call(new WBlob())), "TypeError: Illegal invocation");
  assert.equal(err(() => WFormData.prototype.append.call({}, "a", "b")), "TypeError: Illegal invocation");
  assert.equal(await aerr(WResponse.prototype.text.call({})), "TypeError: Illegal invocation");
  assert.equal(await aerr(WRequest.prototype.json.call(new WResponse("1"))), "TypeError: Illegal invocation");
  assert.equal(await aerr(WBlob.prototype.text.call({})), "TypeError: Illegal invocation");
  const it = new WHeaders().keys();
  assert.equal(err(() => it.next.call({})), "TypeError: Illegal invocation");
});

// ---- Headers -------------------------------------------------------------------------
function headersScript(H) {
  const log = [];
  const h = new H({ "Content-Type": "text/plain", "X-B": "  spaced\t " });
  h.append("x-a", "1");
  h.append("X-A", "2");
  h.append("Set-Cookie", "c=1");
  h.append("set-cookie", "d=2");
  h.append("accept", "");
  log.push(["entries", [...h]]);
  log.push(["keys", [...h.keys()]]);
  log.push(["values", [...h.values()]]);
  log.push(["get", h.get("x-a"), h.get("X-B"), h.get("set-cookie"), h.get("missing"), h.get("accept")]);
  log.push(["has", h.has("CONTENT-TYPE"), h.has("nope")]);
  log.push(["getSetCookie", h.getSetCookie()]);
  h.set("x-a", "3");
  h.delete("content-type");
  h.set("new", "v");
  log.push(["after", [...h]]);
  const fe = [];
  h.forEach(function (v, k, self) { fe.push([k, v, self === h, this.tag]); }, { tag: "t" });
  log.push(["forEach", fe]);
  log.push(["copy", [...new H(h)], [...new H([["a", "1"], ["a", "2"], ["b", "3"]])], [...new H(new Map([["m", "1"]]))]]);
  const live = new H([["b", "1"]]);
  const seen = [];
  for (const [k] of live) { seen.push(k); if (k === "b") live.append("c", "2"); }
  log.push(["live", seen]);
  log.push(["latin1", new H({ x: "caf\u00e9" }).get("x")]);
  return log;
}

test("Headers behave like node's Headers", () => {
  assert.deepEqual(plain(headersScript(WHeaders)), plain(headersScript(Headers)));
});

test("Headers validation: CR/LF/NUL injection, names, ByteString, arity (same errors as node)", () => {
  const cases = [
    (H) => new H().append("x", "a\r\nInjected: yes"),
    (H) => new H().append("x", "a\nb"),
    (H) => new H().append("x", "a\rb"),
    (H) => new H().append("x", "a\0b"),
    (H) => new H().set("x", "a\r\nb"),
    (H) => new H({ x: "1\r\nSet-Cookie: evil=1" }),
    (H) => new H([["x", "1\nY: 2"]]),
    (H) => new H().append("a b", "v"),
    (H) => new H().append("a:b", "v"),
    (H) => new H().append("", "v"),
    (H) => new H().append("x\r\ny", "v"),
    (H) => new H().get("bad name"),
    (H) => new H().has("bad name"),
    (H) => new H().delete("bad name"),
    (H) => new H().append("x", "\u20ac"),
    (H) => new H().append("x"),
    (H) => new H().append(),
    (H) => new H().get(),
    (H) => new H(null),
    (H) => new H(5),
    (H) => new H([["a"]]),
    (H) => new H([["a", "b", "c"]]),
  ];
  for (const c of cases) {
    const mine = err(() => c(WHeaders));
    assert.ok(mine !== null, "expected a throw from " + c);
    assert.equal(mine, err(() => c(Headers)), String(c));
  }
  assert.equal(err(() => new WHeaders().append("x", "a\r\nb")), "TypeError: Headers.append: \"a\r\nb\" is an invalid header value.");
  // Leading/trailing whitespace (including CR/LF) is stripped, not rejected.
  const h = new WHeaders({ x: "\r\n value \r\n" });
  assert.equal(h.get("x"), "value");
  assert.equal(new Headers({ x: "\r\n value \r\n" }).get("x"), "value");
  // Validation also guards fetch: nothing reaches the tool.
  const before = calls.length;
  return aerr(wfetch("http://127.0.0.1:1/", { headers: { "x-a": "1\r\nInjected: yes" } })).then((e) => {
    assert.match(e, /^TypeError: Headers\.append: "1\r\nInjected: yes" is an invalid header value\.$/);
    assert.equal(calls.length, before);
  });
});

// ---- Blob and File ----------------------------------------------------------------------
function blobCases(B) {
  const inner = new B(["inner"], { type: "x/inner" });
  return [
    [[], undefined],
    [["abc"], { type: "Text/Plain;Charset=UTF-8" }],
    [["a", new Uint8Array([1, 2, 3]), "\u00e9\u{1F600}"], {}],
    [[new Uint8Array([1, 2, 3, 4]).buffer], { type: "\u00fcnicode" }],
    [[new DataView(new Uint8Array([9, 8, 7]).buffer, 1)], { type: "a\u0019b" }],
    [[new Uint16Array([0x4142, 0x4344]), new Float32Array([1.5])], null],
    [[new Uint8Array([0, 1, 2, 3, 4, 5]).subarray(2, 4)], undefined],
    [["lone \ud800 surrogate"], undefined],
    [["a\r\nb\rc\n"], { endings: "native", type: "n/n" }],
    [["a\r\nb\rc\n"], { endings: "transparent" }],
    [[inner, "+", inner], { type: "multi/part" }],
    [[42, null, { toString: () => "obj" }], undefined],
  ];
}
async function describeBlob(b) {
  return {
    size: b.size, type: b.type, text: await b.text(), bytes: Array.from(new Uint8Array(await b.arrayBuffer())),
    bytes2: Array.from(await b.bytes()),
    slices: await Promise.all([[0, 2], [-2], [1, -1], [5, 1], [undefined, undefined, "X/Y"], [-100, 100, "\u00e9"], [2, 3, "a/b"]]
      .map(async (a) => { const s = b.slice(...a); return [s.size, s.type, Array.from(new Uint8Array(await s.arrayBuffer()))]; })),
  };
}

test("Blob behaves like node's Blob", async () => {
  const mine = blobCases(WBlob), theirs = blobCases(Blob);
  for (let i = 0; i < mine.length; i++) {
    const a = await describeBlob(new WBlob(...mine[i]));
    const b = await describeBlob(new Blob(...theirs[i]));
    if (mine[i][1] && mine[i][1].endings === "native") {
      // The File API converts CRLF and lone CR to LF; node converts CRLF only.
      assert.equal(a.text, "a\nb\nc\n");
      assert.equal(b.text, "a\nb\rc\n");
      continue;
    }
    assert.deepEqual(a, b, "case " + i);
  }
  assert.equal(err(() => new WBlob([], { endings: "x" })).split(":")[0], "TypeError");
  assert.equal(err(() => new WBlob(5)).split(":")[0], "TypeError");
  assert.equal(err(() => new WBlob({})).split(":")[0], "TypeError");
  assert.match(err(() => new WBlob([]).stream()), /^TypeError: Blob\.stream: ReadableStream is not supported.*text\(\)/);
  // A Blob's bytes are copied from its parts.
  const src = new Uint8Array([1, 2, 3]);
  const b = new WBlob([src]);
  src[0] = 99;
  assert.deepEqual(bytesOf(await b.bytes()), [1, 2, 3]);
  const out = await b.bytes();
  out[1] = 77;
  assert.deepEqual(bytesOf(await b.bytes()), [1, 2, 3]);
});

test("File has name and lastModified and extends Blob", async () => {
  const f = new WFile(["hello"], "greeting.txt", { type: "Text/Plain", lastModified: 1234 });
  const g = new File(["hello"], "greeting.txt", { type: "Text/Plain", lastModified: 1234 });
  // lastModified is a WebIDL long long: truncated (node keeps the fraction).
  assert.equal(new WFile([], "x", { lastModified: 1234.9 }).lastModified, 1234);
  assert.equal(new WFile([], "x", { lastModified: "-7.5" }).lastModified, -7);
  assert.deepEqual([f.name, f.lastModified, f.type, f.size, await f.text()], [g.name, g.lastModified, g.type, g.size, await g.text()]);
  const now = Date.now();
  const d = new WFile([], "x");
  assert.ok(Math.abs(d.lastModified - now) < 5000);
  assert.ok(d instanceof WBlob && d instanceof WFile);
  assert.equal(Object.prototype.toString.call(f.slice(1)), "[object Blob]");
  assert.equal(err(() => new WFile([])), "TypeError: File constructor: 2 arguments required, but only 1 found.");
  assert.equal(new WFile([], "a\ud800").name, "a\ufffd");
});

// ---- FormData ---------------------------------------------------------------------------
async function formDataScript(F, B, Fi) {
  const log = [];
  const fd = new F();
  fd.append("a", "1");
  fd.append("a", "2");
  fd.append("blob", new B(["bb"], { type: "x/b" }));
  fd.append("named", new B(["nn"]), "n.txt");
  fd.append("file", new Fi(["ff"], "orig.txt", { type: "text/plain", lastModified: 5 }));
  fd.append("renamed", new Fi(["rr"], "orig.txt", { lastModified: 7 }), "new.txt");
  fd.append("num", 42);
  const desc = (v) => (typeof v === "string" ? v : { tag: Object.prototype.toString.call(v), name: v.name, type: v.type, size: v.size });
  log.push(["entries", [...fd].map(([k, v]) => [k, desc(v)])]);
  log.push(["get", desc(fd.get("a")), fd.get("none"), desc(fd.get("blob")), desc(fd.get("named")), desc(fd.get("file"))]);
  log.push(["file lastModified", fd.get("file").lastModified, fd.get("renamed").lastModified]);
  log.push(["getAll", fd.getAll("a"), fd.getAll("none")]);
  log.push(["has", fd.has("a"), fd.has("none")]);
  fd.set("a", "3");
  fd.delete("blob");
  fd.set("z", "last");
  log.push(["after", [...fd.keys()], [...fd.values()].map(desc)]);
  const fe = [];
  fd.forEach((v, k) => fe.push(k));
  log.push(["forEach", fe]);
  log.push(["errors", err(() => fd.append("a", "b", "c")) !== null, err(() => fd.append("a")), err(() => new F(5)) !== null]);
  return log;
}

test("FormData behaves like node's FormData", async () => {
  assert.deepEqual(plain(await formDataScript(WFormData, WBlob, WFile)), plain(await formDataScript(FormData, Blob, File)));
});

// ---- Response and Request: constructors and statics -----------------------------------------
async function responseScript(R, B, F) {
  const log = [];
  const bodies = [
    ["string", "text \u00e9"], ["u8", new Uint8Array([104, 105])], ["ab", new Uint8Array([104, 105]).buffer],
    ["dv", new DataView(new Uint8Array([104, 105, 106]).buffer, 1)], ["usp", new URLSearchParams("a=1&b=\u00e9 x")],
    ["blob", new B(["blob"], { type: "X/Blob" })], ["typeless blob", new B(["b"])], ["null", null], ["undefined", undefined],
  ];
  for (const [name, body] of bodies) {
    const r = new R(body);
    log.push([name, r.status, r.ok, r.statusText, r.type, r.url, r.redirected, r.headers.get("content-type"), r.bodyUsed, await r.text(), r.bodyUsed]);
  }
  const fd = new F();
  fd.append("k", "v");
  log.push(["formdata", /^multipart\/form-data; boundary=-+[0-9A-Za-z-]+$/.test(new R(fd).headers.get("content-type"))]);
  const custom = new R("x", { status: 201, statusText: "Created OK", headers: { "Content-Type": "text/custom", "X-A": "1" } });
  log.push(["custom", custom.status, custom.ok, custom.statusText, [...custom.headers]]);
  log.push(["status coercion", new R(null, { status: "202" }).status, new R(null, { status: 299.9 }).status, new R(null, { status: 65736 }).status]);
  log.push(["errors",
    err(() => new R("x", { status: 204 })), err(() => new R("x", { status: 304 })), err(() => new R(null, { status: 100 })),
    err(() => new R(null, { status: 600 })), err(() => new R(null, { statusText: "a\nb" })),
    err(() => new R(null, { statusText: "\u0100" })), err(() => new R(null, { headers: { "a b": "c" } })) !== null]);
  log.push(["204 null body ok", new R(null, { status: 204 }).status, new R(undefined, { status: 205 }).status]);
  const e = R.error();
  log.push(["error", e.type, e.status, e.ok, e.statusText, e.url, [...e.headers], await e.text(), err(() => e.headers.set("a", "b")) !== null]);
  const rd = R.redirect("http://example.com/a?b#c", 307);
  log.push(["redirect", rd.status, rd.type, rd.headers.get("location"), rd.redirected, err(() => rd.headers.append("a", "b")) !== null]);
  log.push(["redirect default", R.redirect("http://example.com/").status]);
  log.push(["redirect errors", err(() => R.redirect("http://x/", 200)), err(() => R.redirect("/relative", 301)).split(" (")[0]]);
  const j = R.json({ a: [1, "\u00e9"] }, { status: 202, headers: { "x-j": "1" } });
  log.push(["json", j.status, j.headers.get("content-type"), j.headers.get("x-j"), await j.json()]);
  log.push(["json ct kept", R.json(1, { headers: { "content-type": "application/vnd+json" } }).headers.get("content-type")]);
  log.push(["json errors", err(() => R.json(undefined)), err(() => R.json(() => 1))]);
  const blob = await new R("x", { headers: { "content-type": "Text/Plain; Charset=UTF-8" } }).blob();
  log.push(["blob types", blob.type, (await new R("x", { headers: { "content-type": "text/html, text/plain" } }).blob()).type,
    (await new R(new URLSearchParams("a=1")).blob()).type, (await new R("x", { headers: { "content-type": "nonsense" } }).blob()).type,
    (await new R(new Uint8Array([1])).blob()).type, (await new R("x", { headers: { "content-type": "text/plain;a=\"q\\\"x\";b=c d" } }).blob()).type]);
  log.push(["json()", await new R("{\"k\":[1]}").json(), await aerr(new R("{").json()), await aerr(new R("").json())]);
  log.push(["bom", await new R("\ufeffabc").text(), await new R(new Uint8Array([0xef, 0xbb, 0xbf, 0x61])).text(), (await new R("\ufeffa").bytes()).length]);
  log.push(["invalid utf8", await new R(new Uint8Array([0x61, 0xff, 0x62])).text()]);
  log.push(["formData errors", await aerr(new R("x").formData())]);
  const u = await new R(new URLSearchParams("a=1&a=2&b=%C3%A9+x")).formData();
  log.push(["urlencoded formData", [...u]]);
  return log;
}

test("Response constructor, statics and readers behave like node's", async () => {
  const a = plain(await responseScript(WResponse, WBlob, WFormData));
  const b = plain(await responseScript(Response, Blob, FormData));
  assert.deepEqual(a, b);
});

test("Response body getter and the bodyUsed / clone rules", async () => {
  assert.equal(new WResponse().body, null);
  assert.equal(new WResponse(null).body, null);
  assert.equal(WResponse.error().body, null);
  assert.match(err(() => new WResponse("x").body), /^TypeError: Response\.body: streaming bodies \(ReadableStream\) are not supported.*text\(\), json\(\), arrayBuffer\(\), blob\(\) or bytes\(\)/);
  assert.match(err(() => new WRequest("http://x/", { method: "POST", body: "x" }).body), /^TypeError: Request\.body: streaming/);
  assert.equal(new WRequest("http://x/").body, null);

  const r = new WResponse("once", { status: 201, headers: { "x-a": "1" } });
  const c = r.clone();
  assert.equal(await r.text(), "once");
  assert.equal(r.bodyUsed, true);
  assert.equal(c.bodyUsed, false);
  assert.equal(await c.text(), "once");
  assert.equal(c.status, 201);
  assert.equal(c.headers.get("x-a"), "1");
  assert.notEqual(c.headers, r.headers);
  assert.equal(await aerr(r.text()), "TypeError: Body is unusable: Body has already been read");
  assert.equal(await aerr(r.arrayBuffer()), "TypeError: Body is unusable: Body has already been read");
  assert.equal(await aerr(r.json()), "TypeError: Body is unusable: Body has already been read");
  assert.equal(err(() => r.clone()), "TypeError: Response.clone: Body has already been consumed.");
  // A null body can be read again and again.
  const n = new WResponse(null);
  assert.equal(await n.text(), "");
  assert.equal(await n.text(), "");
  assert.equal(n.bodyUsed, false);
  // Same messages as node.
  const nr = new Response("x");
  await nr.text();
  assert.equal(await aerr(nr.text()), "TypeError: Body is unusable: Body has already been read");
  assert.equal(err(() => nr.clone()), "TypeError: Response.clone: Body has already been consumed.");
  // Each reader gives fresh bytes.
  const bytes = new WResponse(new Uint8Array([1, 2, 3]));
  const c2 = bytes.clone();
  const ab = await bytes.arrayBuffer();
  new Uint8Array(ab)[0] = 9;
  assert.deepEqual(bytesOf(await c2.bytes()), [1, 2, 3]);
  // Clone of a clone after reading the original.
  const r2 = new WResponse("chain");
  const c3 = r2.clone();
  await r2.blob();
  assert.equal(await c3.clone().text(), "chain");
});

function requestScript(Rq) {
  const log = [];
  const d = new Rq("http://example.com/a b?q=1#frag");
  log.push(["defaults", d.url, d.method, d.referrer, d.referrerPolicy, d.mode, d.credentials, d.cache, d.redirect, d.destination,
    d.integrity, d.keepalive, d.isReloadNavigation, d.isHistoryNavigation, d.duplex, d.bodyUsed, [...d.headers], d.signal.aborted]);
  for (const m of ["get", "post", "put", "delete", "head", "options", "patch", "Custom", "POST"]) {
    log.push(["method", m, new Rq("http://x/", { method: m }).method]);
  }
  log.push(["method errors", err(() => new Rq("http://x/", { method: "CONNECT" })), err(() => new Rq("http://x/", { method: "trace" })),
    err(() => new Rq("http://x/", { method: "track" })), err(() => new Rq("http://x/", { method: "a b" }))]);
  log.push(["body errors", err(() => new Rq("http://x/", { body: "x" })), err(() => new Rq("http://x/", { method: "HEAD", body: "" }))]);
  log.push(["url errors", err(() => new Rq("/relative")).split(" (")[0], err(() => new Rq("http://u:p@x/")), err(() => new Rq())]);
  log.push(["enums", err(() => new Rq("http://x/", { redirect: "nope" })) !== null, err(() => new Rq("http://x/", { mode: "navigate" })),
    err(() => new Rq("http://x/", { cache: "only-if-cached" })), err(() => new Rq("http://x/", { signal: 5 })),
    err(() => new Rq("http://x/", { window: 5 })) !== null, err(() => new Rq("http://x/", { credentials: "x" })) !== null]);
  const full = new Rq("http://x/", {
    method: "POST", body: "b", redirect: "manual", mode: "same-origin", credentials: "include", cache: "no-store",
    referrer: "", referrerPolicy: "no-referrer", integrity: "sha256-x", keepalive: true, headers: { "X-Y": "z" },
  });
  log.push(["full", full.method, full.redirect, full.mode, full.credentials, full.cache, full.referrer, full.referrerPolicy,
    full.integrity, full.keepalive, [...full.headers]]);
  log.push(["referrer url", new Rq("http://x/", { referrer: "http://r.example/p" }).referrer, new Rq("http://x/", { referrer: "about:client" }).referrer]);
  const usp = new Rq("http://x/", { method: "POST", body: new URLSearchParams("a=1") });
  log.push(["content types", usp.headers.get("content-type"), new Rq("http://x/", { method: "POST", body: "s" }).headers.get("content-type"),
    new Rq("http://x/", { method: "POST", body: "s", headers: { "content-type": "x/y" } }).headers.get("content-type"),
    new Rq("http://x/", { method: "POST", body: new Uint8Array(1) }).headers.get("content-type")]);
  // new Request(request, init) copies and overrides.
  const src = new Rq("http://x/src", { method: "PUT", body: "moved", headers: { a: "1" }, redirect: "error" });
  const copy = new Rq(src, { headers: { b: "2" } });
  log.push(["copy", copy.url, copy.method, copy.redirect, [...copy.headers], src.bodyUsed]);
  log.push(["reuse", err(() => new Rq(src))]);
  const replaced = new Rq("http://x/", { method: "POST", body: "orig" });
  const withNew = new Rq(replaced, { body: "new" });
  log.push(["replaced body", replaced.bodyUsed, withNew.bodyUsed]);
  const cl = new Rq("http://x/c", { method: "POST", body: "cl", headers: { h: "1" } });
  const cl2 = cl.clone();
  log.push(["clone", cl2.url, cl2.method, [...cl2.headers], cl2.headers === cl.headers]);
  return log;
}

test("Request constructor behaves like node's", async () => {
  assert.deepEqual(plain(requestScript(WRequest)), plain(requestScript(Request)));
  // Relative URLs: no base in wrepl, and the message says so.
  assert.match(err(() => new WRequest("/x")), /^TypeError: Failed to parse URL from \/x \(fetch in wrepl has no base URL/);
  // Bodies of Requests.
  const r = new WRequest("http://x/", { method: "POST", body: "req body" });
  const c = r.clone();
  assert.equal(await r.text(), "req body");
  assert.equal(err(() => r.clone()), "TypeError: Request.clone: Body has already been consumed.");
  assert.equal(await c.text(), "req body");
  assert.equal(await new WRequest("http://x/").text(), "");
  const fr = await new WRequest("http://x/", { method: "POST", body: new URLSearchParams("x=1&y=2") }).formData();
  assert.deepEqual(plain([...fr]), [["x", "1"], ["y", "2"]]);
});

test("Request signals follow init.signal, the input Request's and clones'", () => {
  const c = new AbortController();
  const r = new WRequest("http://x/", { signal: c.signal });
  assert.notEqual(r.signal, c.signal);
  const r2 = new WRequest(r);
  const r3 = r.clone();
  const r4 = new WRequest(r, { signal: null });
  assert.equal(r.signal.aborted, false);
  const reason = new Error("why");
  c.abort(reason);
  assert.equal(r.signal.aborted, true);
  assert.equal(r.signal.reason, reason);
  assert.equal(r2.signal.reason, reason);
  assert.equal(r3.signal.reason, reason);
  assert.equal(r4.signal.aborted, false);
  const pre = new WRequest("http://x/", { signal: AbortSignal.abort("already") });
  assert.equal(pre.signal.aborted, true);
  assert.equal(pre.signal.reason, "already");
});

// ---- formData() parsing -------------------------------------------------------------------
test("multipart/form-data: our encoding parses in node, node's parses here", async () => {
  const fd = new WFormData();
  fd.append("text", "multi\nline \u00e9 \"quoted\"");
  fd.append("we\"ird\nname", "v");
  fd.append("file", new WFile([new Uint8Array([0, 13, 10, 45, 45, 255])], "b\u00e9n.bin", { type: "application/x-bin" }));
  fd.append("blob", new WBlob(["plain"]));
  const r = new WResponse(fd);
  const ct = r.headers.get("content-type");
  const bytes = await r.bytes();
  const theirs = await new Response(bytes, { headers: { "content-type": ct } }).formData();
  const out = [];
  for (const [k, v] of theirs) out.push(typeof v === "string" ? [k, v] : [k, v.name, v.type, Array.from(new Uint8Array(await v.arrayBuffer()))]);
  assert.deepEqual(out, [
    ["text", "multi\r\nline \u00e9 \"quoted\""],
    ["we\"ird\r\nname", "v"],
    ["file", "b\u00e9n.bin", "application/x-bin", [0, 13, 10, 45, 45, 255]],
    ["blob", "blob", "application/octet-stream", [112, 108, 97, 105, 110]],
  ]);
  // Round trip through our own parser.
  const mine = await new WResponse(bytes, { headers: { "content-type": ct } }).formData();
  const out2 = [];
  for (const [k, v] of mine) out2.push(typeof v === "string" ? [k, v] : [k, v.name, v.type, bytesOf(await v.bytes())]);
  assert.deepEqual(plain(out2), plain(out));
  // node's encoding, parsed here.
  const nfd = new FormData();
  nfd.append("a", "1");
  nfd.append("f", new File(["hi"], "h.txt", { type: "text/plain" }));
  const nr = new Response(nfd);
  const parsed = await new WResponse(new Uint8Array(await nr.arrayBuffer()), { headers: { "content-type": nr.headers.get("content-type") } }).formData();
  assert.equal(parsed.get("a"), "1");
  assert.equal(parsed.get("f").name, "h.txt");
  assert.equal(await parsed.get("f").text(), "hi");
  // Malformed bodies are TypeErrors.
  assert.match(await aerr(new WResponse("garbage", { headers: { "content-type": "multipart/form-data; boundary=zz" } }).formData()), /^TypeError: Response\.formData: the multipart\/form-data body could not be parsed/);
  assert.match(await aerr(new WResponse("x", { headers: { "content-type": "multipart/form-data" } }).formData()), /no boundary/);
});

// ---- fetch: GET ---------------------------------------------------------------------------------
test("fetch GET: text, json, arrayBuffer, bytes, blob", async () => {
  const n = calls.length;
  const r = await wfetch(base + "/text");
  assert.equal(Object.prototype.toString.call(r), "[object Response]");
  assert.equal(r.status, 200);
  assert.equal(r.ok, true);
  assert.equal(r.statusText, "OK");
  assert.equal(r.type, "basic");
  assert.equal(r.url, base + "/text");
  assert.equal(r.redirected, false);
  assert.equal(r.headers.get("content-type"), "text/plain;charset=utf-8");
  assert.equal(await r.text(), "hello wrepl \u2713");
  assert.equal(calls.length, n + 1);
  assert.deepEqual(calls[n], { url: base + "/text", method: "GET", headers: [["accept", "*/*"], ["user-agent", "wrepl"]] });

  assert.deepEqual(plain(await (await wfetch(base + "/json")).json()), { a: 1, b: [true, null, "x\u00e9"] });
  const bin = await wfetch(base + "/bin");
  const ab = await bin.clone().arrayBuffer();
  assert.equal(ab.byteLength, 256);
  assert.deepEqual(Array.from(new Uint8Array(ab)), Array.from({ length: 256 }, (_, i) => i));
  assert.deepEqual(bytesOf(await bin.bytes()), Array.from({ length: 256 }, (_, i) => i));
  const blob = await (await wfetch(base + "/text")).blob();
  assert.equal(blob.type, "text/plain;charset=utf-8");
  assert.equal(await blob.text(), "hello wrepl \u2713");
  assert.equal(await (await wfetch(base + "/bom")).text(), "bom!");
  assert.equal((await caught((await wfetch(base + "/text")).json())).name, "SyntaxError");
  const tea = await wfetch(base + "/teapot");
  assert.deepEqual([tea.status, tea.ok, tea.statusText, await tea.text()], [418, false, "I'm a teapot", "short and stout"]);
  const missing = await wfetch(new URL(base + "/missing"));
  assert.equal(missing.status, 404);
  assert.equal(missing.ok, false);
  // Fetched headers are immutable.
  assert.match(err(() => tea.headers.set("x", "y")), /^TypeError: Headers\.set: these headers are immutable/);
  assert.match(err(() => tea.headers.delete("content-type")), /immutable/);
  // The body getter: present body throws, HEAD/204 give null.
  assert.throws(() => tea.body, /streaming bodies/);
  const head = await wfetch(base + "/text", { method: "head" });
  assert.equal(head.body, null);
  assert.equal(await head.text(), "");
  assert.equal(calls.at(-1).method, "HEAD");
  const nc = await wfetch(base + "/nocontent");
  assert.deepEqual([nc.status, nc.body, await nc.text()], [204, null, ""]);
});

test("fetch sends headers and receives repeated ones (set-cookie)", async () => {
  const r = await echo(await wfetch(base + "/echo?x=1", { headers: [["X-One", "1"], ["x-one", "2"], ["Authorization", "Bearer t"]] }));
  assert.equal(r.method, "GET");
  assert.equal(r.path, "/echo?x=1");
  assert.equal(r.h["x-one"], "1, 2");
  assert.equal(r.h.authorization, "Bearer t");
  assert.equal(r.h.accept, "*/*");
  assert.equal(r.h["user-agent"], "wrepl");
  const r2 = await echo(await wfetch(base + "/echo", { headers: { "User-Agent": "me/1", Accept: "application/json" } }));
  assert.equal(r2.h["user-agent"], "me/1");
  assert.equal(r2.h.accept, "application/json");
  const c = await wfetch(base + "/cookies");
  assert.deepEqual(plain(c.headers.getSetCookie()), ["a=1; Path=/", "b=2"]);
  assert.equal(c.headers.get("set-cookie"), "a=1; Path=/, b=2");
  assert.equal(c.headers.get("x-multi"), "1, 2");
  const entries = plain([...c.headers]).filter(([k]) => k !== "date" && k !== "connection" && k !== "keep-alive" && k !== "transfer-encoding");
  assert.deepEqual(entries, [["content-type", "text/plain"], ["set-cookie", "a=1; Path=/"], ["set-cookie", "b=2"], ["x-multi", "1, 2"]]);
  // Node's fetch sees the same.
  const nc = await fetch(base + "/cookies");
  assert.deepEqual(nc.headers.getSetCookie(), ["a=1; Path=/", "b=2"]);
  assert.equal(nc.headers.get("x-multi"), c.headers.get("x-multi"));
  await nc.text();
  // Framing headers the host's client owns are left out; Host still goes (and the host refuses it).
  const framing = await echo(await wfetch(base + "/echo", {
    method: "POST", body: "abc", headers: { "Content-Length": "3", Connection: "keep-alive", "Keep-Alive": "timeout=5", Expect: "100-continue", "X-Ok": "1" },
  }));
  assert.equal(framing.h["x-ok"], "1");
  assert.equal(framing.h["keep-alive"], undefined);
  assert.equal(framing.h.expect, undefined);
  assert.equal(framing.text, "abc");
  assert.deepEqual(calls.at(-1).headers.map(([k]) => k), ["x-ok", "content-type", "accept", "user-agent"]);
  const hostHeader = await caught(wfetch(base + "/echo", { headers: { Host: "evil.example" } }));
  assert.equal(hostHeader.message, "fetch failed: WebFetch input: the request header \"host\" may not be set (it is the client's own)");
  assert.equal(hostHeader.cause.kind, "invalid-input");
  // A Request's headers are what is sent.
  const req = new WRequest(base + "/echo", { headers: { "x-req": "yes" } });
  assert.equal((await echo(await wfetch(req))).h["x-req"], "yes");
});

// ---- fetch: bodies ---------------------------------------------------------------------------
test("fetch POST bodies: JSON, text, URLSearchParams, binary, Blob, FormData", async () => {
  const json = await echo(await wfetch(base + "/echo", { method: "POST", body: JSON.stringify({ k: "\u00e9\u{1F600}" }), headers: { "content-type": "application/json" } }));
  assert.equal(json.method, "POST");
  assert.equal(json.text, "{\"k\":\"\u00e9\u{1F600}\"}");
  assert.equal(json.h["content-type"], "application/json");
  assert.equal(calls.at(-1).bodyEncoding, "utf8");
  assert.equal(calls.at(-1).body, "{\"k\":\"\u00e9\u{1F600}\"}");

  const text = await echo(await wfetch(base + "/echo", { method: "post", body: "plain" }));
  assert.equal(text.method, "POST");
  assert.equal(text.h["content-type"], "text/plain;charset=UTF-8");
  assert.equal(text.h["content-length"], "5");

  const usp = await echo(await wfetch(base + "/echo", { method: "POST", body: new URLSearchParams({ a: "1", b: "\u00e9 x&y" }) }));
  assert.equal(usp.text, "a=1&b=%C3%A9+x%26y");
  assert.equal(usp.h["content-type"], "application/x-www-form-urlencoded;charset=UTF-8");
  assert.equal(calls.at(-1).bodyEncoding, "utf8");

  const all = Uint8Array.from({ length: 256 }, (_, i) => 255 - i);
  const bin = await echo(await wfetch(base + "/echo", { method: "PUT", body: all }));
  assert.deepEqual(bin.bytes, Array.from(all));
  assert.equal(bin.h["content-type"], undefined);
  assert.equal(calls.at(-1).bodyEncoding, "base64");
  assert.equal(calls.at(-1).body, Buffer.from(all).toString("base64"));
  const view = await echo(await wfetch(base + "/echo", { method: "PUT", body: new DataView(all.buffer, 250, 3) }));
  assert.deepEqual(view.bytes, [5, 4, 3]);
  const ab = await echo(await wfetch(base + "/echo", { method: "PUT", body: all.buffer.slice(0, 2) }));
  assert.deepEqual(ab.bytes, [255, 254]);

  const blob = await echo(await wfetch(base + "/echo", { method: "POST", body: new WBlob(["blob ", new Uint8Array([0xff])], { type: "Application/X-Blob" }) }));
  assert.deepEqual(blob.bytes, [98, 108, 111, 98, 32, 255]);
  assert.equal(blob.h["content-type"], "application/x-blob");

  const fd = new WFormData();
  fd.append("name", "wrepl \u00e9");
  fd.append("upload", new WBlob([new Uint8Array([1, 2, 3])], { type: "application/x-up" }), "up.bin");
  const form = await wfetch(base + "/form-echo", { method: "POST", body: fd });
  assert.equal(form.status, 200, await form.clone().text());
  assert.deepEqual(plain(await form.json()), [["name", "wrepl \u00e9"], ["upload", { name: "up.bin", type: "application/x-up", bytes: [1, 2, 3] }]]);
  assert.match(calls.at(-1).headers.find(([k]) => k === "content-type")[1], /^multipart\/form-data; boundary=/);
  assert.equal(calls.at(-1).bodyEncoding, "base64");

  const uform = await wfetch(base + "/form-echo", { method: "POST", body: new URLSearchParams("p=1&q=2") });
  assert.deepEqual(plain(await uform.json()), [["p", "1"], ["q", "2"]]);

  // A Request with a body is used up by fetch.
  const req = new WRequest(base + "/echo", { method: "POST", body: "from request" });
  assert.equal((await echo(await wfetch(req))).text, "from request");
  assert.equal(req.bodyUsed, true);
  assert.match(await aerr(wfetch(req)), /^TypeError: Cannot construct a Request with a Request object that has already been used\./);
  // Methods go uppercase on the wire; Request.method keeps the standard's case.
  const patch = await echo(await wfetch(base + "/echo", { method: "patch", body: "p" }));
  assert.equal(patch.method, "PATCH");
  assert.equal(calls.at(-1).method, "PATCH");
});

// ---- fetch: redirects ---------------------------------------------------------------------------
test("redirects: 301/302 POST become GET without body or content-* headers", async () => {
  for (const status of [301, 302]) {
    const n = calls.length;
    const r = await wfetch(base + "/redirect?status=" + status + "&to=/echo", {
      method: "POST", body: "payload", headers: { "content-type": "text/plain", "content-language": "en", "x-keep": "1" },
    });
    assert.equal(r.redirected, true);
    assert.equal(r.url, base + "/echo");
    const e = await echo(r);
    assert.equal(e.method, "GET");
    assert.equal(e.text, "");
    assert.equal(e.h["content-type"], undefined);
    assert.equal(e.h["content-language"], undefined);
    assert.equal(e.h["x-keep"], "1");
    assert.equal(calls.length, n + 2);
    assert.equal(calls[n].method, "POST");
    assert.equal(calls[n].body, "payload");
    assert.equal(calls[n + 1].method, "GET");
    assert.equal("body" in calls[n + 1], false);
  }
  // 302 with PUT keeps the method and body (only POST is rewritten).
  const put = await echo(await wfetch(base + "/redirect?status=302&to=/echo", { method: "PUT", body: "kept" }));
  assert.deepEqual([put.method, put.text], ["PUT", "kept"]);
  // 303 makes anything but GET/HEAD a GET.
  const see = await echo(await wfetch(base + "/redirect?status=303&to=/echo", { method: "PUT", body: "gone" }));
  assert.deepEqual([see.method, see.text], ["GET", ""]);
  const head = await wfetch(base + "/redirect?status=303&to=/text", { method: "HEAD" });
  assert.equal(calls.at(-1).method, "HEAD");
  assert.equal(head.status, 200);
});

test("redirects: 307/308 keep method and body", async () => {
  const r = await wfetch(base + "/redirect?status=307&to=/echo", { method: "POST", body: "payload", headers: { "content-type": "text/x-kept" } });
  const e = await echo(r);
  assert.deepEqual([e.method, e.text, e.h["content-type"]], ["POST", "payload", "text/x-kept"]);
  const bin = new Uint8Array([0, 255, 1]);
  const e2 = await echo(await wfetch(base + "/redirect?status=308&to=/echo", { method: "PUT", body: bin }));
  assert.deepEqual([e2.method, e2.bytes], ["PUT", [0, 255, 1]]);
  assert.equal(calls.at(-1).bodyEncoding, "base64");
});

test("redirects: relative Location, fragments, no Location, limit of 20", async () => {
  const r = await wfetch(base + "/rel/a/b");
  assert.equal(r.url, base + "/text?from=rel");
  assert.equal(r.redirected, true);
  assert.equal(await r.text(), "hello wrepl \u2713");
  // The fragment is never sent, is inherited by a Location without one, and Response.url drops it.
  const n = calls.length;
  const f = await wfetch(base + "/redirect?status=302&to=/text#frag0");
  assert.equal(f.url, base + "/text");
  assert.equal(calls[n + 1].url, base + "/text");
  // A 3xx without Location is the response.
  const nl = await wfetch(base + "/nolocation");
  assert.deepEqual([nl.status, nl.redirected, await nl.text()], [302, false, "no location"]);
  // Exactly 20 redirects are followed; the 21st fails.
  const ok = await wfetch(base + "/chain/20");
  assert.equal(await ok.text(), "end of chain");
  assert.equal(ok.url, base + "/chain/0");
  const m = calls.length;
  const e = await caught(wfetch(base + "/chain/21"));
  assert.equal(e.name, "TypeError");
  assert.equal(e.message, "fetch failed: too many redirects (more than 20)");
  assert.equal(calls.length, m + 21);
  // node says the same kind of thing
  assert.equal((await caught(fetch(base + "/chain/21"))).name, "TypeError");
});

test("redirects: error and manual modes", async () => {
  const n = calls.length;
  const e = await caught(wfetch(base + "/redirect?status=301&to=/text", { redirect: "error" }));
  assert.equal(e.name, "TypeError");
  assert.match(e.message, /^fetch failed: .*answered 301 redirecting to http:\/\/127\.0\.0\.1:\d+\/text and the request's redirect mode is "error"/);
  assert.equal(calls.length, n + 1);
  const m = await wfetch(base + "/redirect?status=302&to=/text", { redirect: "manual" });
  assert.equal(m.status, 302);
  assert.equal(m.redirected, false);
  assert.equal(m.type, "basic");
  assert.equal(m.url, base + "/redirect?status=302&to=/text");
  assert.equal(m.headers.get("location"), "/text");
  assert.equal(await m.text(), "redirecting");
  assert.equal(calls.length, n + 2);
  const viaRequest = await wfetch(new WRequest(base + "/redirect?status=307&to=/text", { redirect: "manual" }));
  assert.equal(viaRequest.status, 307);
});

test("redirects: cross-origin drops authorization and cookie, same-origin keeps them", async () => {
  const headers = { authorization: "Bearer secret", cookie: "s=1", "x-keep": "1" };
  const cross = await echo(await wfetch(base + "/redirect?status=302&to=" + encodeURIComponent(base2 + "/echo"), { headers }));
  assert.equal(cross.port, new URL(base2).port * 1);
  assert.equal(cross.h.authorization, undefined);
  assert.equal(cross.h.cookie, undefined);
  assert.equal(cross.h["x-keep"], "1");
  const same = await echo(await wfetch(base + "/redirect?status=302&to=/echo", { headers }));
  assert.equal(same.h.authorization, "Bearer secret");
  assert.equal(same.h.cookie, "s=1");
  // Non-http(s) redirect targets fail.
  assert.match(await aerr(wfetch(base + "/redirect?status=302&to=" + encodeURIComponent("file:///etc/passwd"))), /^TypeError: fetch failed: .*not an http: or https: URL/);
});

// ---- fetch: abort ----------------------------------------------------------------------------------
test("abort before the call: no tool call, rejects with the signal's reason", async () => {
  const n = calls.length;
  const c = new AbortController();
  const reason = new Error("stop now");
  c.abort(reason);
  assert.equal(await caught(wfetch(base + "/text", { signal: c.signal })), reason);
  const e = await caught(wfetch(base + "/text", { signal: AbortSignal.abort() }));
  assert.equal(e.name, "AbortError");
  const req = new WRequest(base + "/text", { signal: AbortSignal.abort("r") });
  assert.equal(await caught(wfetch(req)), "r");
  assert.equal(calls.length, n);
});

test("abort during a slow response: cancel() is called and the fetch rejects", async () => {
  const c = new AbortController();
  const seen = waitFor("/slow");
  const cancelsBefore = cancels;
  const p = wfetch(base + "/slow", { signal: c.signal });
  const { res } = await seen;
  const closed = new Promise((resolve) => res.on("close", resolve));
  c.abort();
  const e = await caught(p);
  assert.equal(e, c.signal.reason);
  assert.equal(e.name, "AbortError");
  assert.equal(cancels, cancelsBefore + 1);
  await closed; // the server saw the request go away

  // The same through a Request's own signal, with a custom reason.
  const c2 = new AbortController();
  const seen2 = waitFor("/slow");
  const p2 = wfetch(new WRequest(base + "/slow", { signal: c2.signal }));
  await seen2;
  c2.abort("custom reason");
  assert.equal(await caught(p2), "custom reason");
  assert.equal(cancels, cancelsBefore + 2);

  // A timeout signal.
  const seen3 = waitFor("/slow");
  const p3 = wfetch(base + "/slow", { signal: AbortSignal.timeout(50) });
  await seen3;
  assert.equal((await caught(p3)).name, "TimeoutError");
  assert.equal(cancels, cancelsBefore + 3);

  // Aborting after the response arrived changes nothing.
  const c4 = new AbortController();
  const r = await wfetch(base + "/text", { signal: c4.signal });
  c4.abort();
  assert.equal(await r.text(), "hello wrepl \u2713");
  assert.equal(cancels, cancelsBefore + 3);
});

test("a shared signal does not accumulate abort listeners across fetches", async () => {
  const c = new AbortController();
  for (let i = 0; i < 5; i++) await (await wfetch(base + "/text", { signal: c.signal })).text();
  await aerr(wfetch(base + "/redirect?status=302&to=/x", { signal: c.signal, redirect: "error" }));
  assert.equal(getEventListeners(c.signal, "abort").length, 0);
});

// ---- fetch: errors ----------------------------------------------------------------------------------
test("tool errors become TypeError('fetch failed: ...') with the ToolError as cause", async () => {
  denyPattern = "/denied";
  try {
    const e = await caught(wfetch(base + "/denied"));
    assert.equal(e.name, "TypeError");
    assert.equal(e.message, "fetch failed: WebFetch(" + base + "/denied) is not allowed: add the permission rule \"WebFetch(domain:127.0.0.1)\" to the sandbox's allow list");
    assert.equal(e.cause.name, "ToolError");
    assert.equal(e.cause.kind, "denied");
  } finally {
    denyPattern = null;
  }
  // A network failure on the host side.
  const closed = http.createServer();
  await new Promise((r) => closed.listen(0, "127.0.0.1", r));
  const port = closed.address().port;
  await new Promise((r) => closed.close(r));
  const f = await caught(wfetch("http://127.0.0.1:" + port + "/"));
  assert.match(f.message, /^fetch failed: WebFetch\(.*\) failed: .*ECONNREFUSED/);
  assert.equal(f.cause.kind, "failed");
  // startCall throwing synchronously, and a malformed result.
  startCallImpl = () => { throw new TypeError("the input of WebFetch is not JSON-serializable"); };
  try {
    const s = await caught(wfetch(base + "/text"));
    assert.equal(s.message, "fetch failed: the input of WebFetch is not JSON-serializable");
    startCallImpl = () => [Promise.resolve({ status: "nope" }), () => {}];
    assert.match((await caught(wfetch(base + "/text"))).message, /^fetch failed: the WebFetch tool returned a malformed result/);
    startCallImpl = () => [Promise.resolve({ url: "x", status: 200, statusText: "OK", headers: [["a", 1]], body: "", bodyEncoding: "utf8" }), () => {}];
    assert.match((await caught(wfetch(base + "/text"))).message, /malformed result \(header 0/);
    startCallImpl = () => [Promise.resolve({ url: "x", status: 200, statusText: "OK", headers: [], body: "!!", bodyEncoding: "base64" }), () => {}];
    assert.match((await caught(wfetch(base + "/text"))).message, /not valid base64/);
  } finally {
    startCallImpl = realStartCall;
  }
});

test("non-http(s) URLs are TypeErrors without a tool call; data: URLs are decoded locally", async () => {
  const n = calls.length;
  for (const u of ["file:///etc/passwd", "ftp://example.com/x", "about:blank", "blob:http://x/uuid"]) {
    const e = await caught(wfetch(u));
    assert.equal(e.name, "TypeError");
    assert.match(e.message, /^fetch failed: unsupported URL scheme/);
  }
  assert.match(await aerr(wfetch("relative/path")), /^TypeError: Failed to parse URL from relative\/path/);
  assert.match(await aerr(wfetch()), /^TypeError: fetch: 1 argument required, but 0 found\./);
  const dataURLs = [
    "data:text/plain;charset=utf-8,hello%20world%E2%9C%93",
    "data:,plain%20text",
    "data:application/octet-stream;base64,AAEC%2F%2B==",
    "data:;base64,aGk",
    "data:text/html;charset=UTF-8;base64,PGI+aGk8L2I+#frag",
    "data:Text/Plain;A=B,x",
  ];
  for (const u of dataURLs) {
    const mine = await wfetch(u);
    const theirs = await fetch(u);
    assert.equal(mine.status, theirs.status, u);
    assert.equal(mine.statusText, theirs.statusText, u);
    assert.equal(mine.headers.get("content-type"), theirs.headers.get("content-type"), u);
    assert.deepEqual(bytesOf(await mine.bytes()), Array.from(new Uint8Array(await theirs.arrayBuffer())), u);
  }
  assert.equal((await wfetch("data:,x#f")).url, "data:,x");
  assert.match(await aerr(wfetch("data:;base64,%%%")), /^TypeError: fetch failed: invalid data: URL/);
  assert.equal(calls.length, n);
});

test("the platform modules used are url and events", () => {
  assert.deepEqual([...new Set(loaded)].sort(), ["events", "url"]);
});
