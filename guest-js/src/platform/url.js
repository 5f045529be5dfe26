// URL and URLSearchParams (the WHATWG URL standard). Parsing, serialising and
// the attribute setters are the `url` crate's (through platform.urlParse and
// platform.urlSet); this file keeps the parts and links a URL to its
// searchParams.
(function (platform, load) {
  "use strict";
  const urlParse = platform.urlParse, urlSet = platform.urlSet;
  const formParse = platform.formParse, formSerialize = platform.formSerialize;
  const toWellFormed = String.prototype.toWellFormed;
  const ReflectApply = Reflect.apply;
  const SymbolIterator = Symbol.iterator;
  // USVString conversion: lone surrogates become U+FFFD.
  function usv(v) {
    if (typeof v === "symbol") throw new TypeError("Cannot convert a Symbol value to a string");
    return ReflectApply(toWellFormed, String(v), []);
  }
  const HREF = 0, ORIGIN = 1, PROTOCOL = 2, USERNAME = 3, PASSWORD = 4, HOST = 5, HOSTNAME = 6, PORT = 7,
    PATHNAME = 8, SEARCH = 9, HASH = 10;

  const urls = new WeakMap(); // URL -> { parts, params }
  const paramsOf = new WeakMap(); // URLSearchParams -> { list, url }
  function state(self) {
    const s = urls.get(self);
    if (s === undefined) throw new TypeError("Illegal invocation: not a URL");
    return s;
  }
  function plist(self) {
    const s = paramsOf.get(self);
    if (s === undefined) throw new TypeError("Illegal invocation: not a URLSearchParams");
    return s;
  }
  function pairsFrom(text) {
    const flat = formParse(text), list = [];
    for (let i = 0; i < flat.length; i += 2) list.push([flat[i], flat[i + 1]]);
    return list;
  }
  function serialize(list) {
    const flat = [];
    for (const [n, v] of list) flat.push(n, v);
    return formSerialize(flat);
  }
  // The URL's query changed: its searchParams follow.
  function reparse(s) {
    if (s.params !== null) {
      const q = s.parts[SEARCH];
      plist(s.params).list = pairsFrom(q.startsWith("?") ? q.slice(1) : q);
    }
  }
  // The params changed: their URL's query follows (empty: no query at all).
  function update(p) {
    if (p.url === null) return;
    const s = state(p.url);
    const text = serialize(p.list);
    const parts = urlSet(s.parts[HREF], "search", text);
    if (parts !== null) s.parts = parts;
  }

  class URLSearchParams {
    constructor(init = "") {
      let list = [];
      if (typeof init === "object" && init !== null || typeof init === "function") {
        const iter = init[SymbolIterator];
        if (iter !== undefined && iter !== null) {
          if (typeof iter !== "function") throw new TypeError("URLSearchParams: the init's Symbol.iterator is not a function");
          for (const pair of init) {
            if (pair === null || (typeof pair !== "object" && typeof pair !== "function")) {
              throw new TypeError("URLSearchParams: each pair must be an iterable of [name, value]");
            }
            const items = [...pair];
            if (items.length !== 2) throw new TypeError("URLSearchParams: each pair must have exactly two items");
            list.push([usv(items[0]), usv(items[1])]);
          }
        } else {
          for (const key of Reflect.ownKeys(init)) {
            const d = Reflect.getOwnPropertyDescriptor(init, key);
            if (d === undefined || !d.enumerable || typeof key === "symbol") continue;
            list.push([usv(key), usv(init[key])]);
          }
        }
      } else {
        let text = usv(init);
        if (text.startsWith("?")) text = text.slice(1);
        list = pairsFrom(text);
      }
      paramsOf.set(this, { list, url: null });
    }
    get size() { return plist(this).list.length; }
    append(name, value) {
      if (arguments.length < 2) throw new TypeError("URLSearchParams.append needs 2 arguments");
      const p = plist(this);
      p.list.push([usv(name), usv(value)]);
      update(p);
    }
    delete(name, value) {
      const p = plist(this);
      name = usv(name);
      if (value === undefined) p.list = p.list.filter(([n]) => n !== name);
      else { value = usv(value); p.list = p.list.filter(([n, v]) => n !== name || v !== value); }
      update(p);
    }
    get(name) {
      name = usv(name);
      for (const [n, v] of plist(this).list) if (n === name) return v;
      return null;
    }
    getAll(name) {
      name = usv(name);
      return plist(this).list.filter(([n]) => n === name).map(([, v]) => v);
    }
    has(name, value) {
      name = usv(name);
      if (value === undefined) return plist(this).list.some(([n]) => n === name);
      value = usv(value);
      return plist(this).list.some(([n, v]) => n === name && v === value);
    }
    set(name, value) {
      const p = plist(this);
      name = usv(name); value = usv(value);
      const i = p.list.findIndex(([n]) => n === name);
      if (i < 0) p.list.push([name, value]);
      else {
        p.list[i][1] = value;
        p.list = p.list.filter(([n], j) => j <= i || n !== name);
      }
      update(p);
    }
    sort() {
      const p = plist(this);
      // Stable, by UTF-16 code units of the names.
      const keyed = p.list.map((pair, i) => [pair, i]);
      keyed.sort((a, b) => (a[0][0] < b[0][0] ? -1 : a[0][0] > b[0][0] ? 1 : a[1] - b[1]));
      p.list = keyed.map(([pair]) => pair);
      update(p);
    }
    forEach(callback, thisArg) {
      if (typeof callback !== "function") throw new TypeError("URLSearchParams.forEach needs a function");
      const p = plist(this);
      for (let i = 0; i < p.list.length; i++) ReflectApply(callback, thisArg, [p.list[i][1], p.list[i][0], this]);
    }
    *entries() { const p = plist(this); for (let i = 0; i < p.list.length; i++) yield [p.list[i][0], p.list[i][1]]; }
    *keys() { const p = plist(this); for (let i = 0; i < p.list.length; i++) yield p.list[i][0]; }
    *values() { const p = plist(this); for (let i = 0; i < p.list.length; i++) yield p.list[i][1]; }
    [SymbolIterator]() { return this.entries(); }
    toString() { return serialize(plist(this).list); }
  }

  function parseOrThrow(url, base) {
    const parts = base === undefined ? urlParse(usv(url)) : urlParse(usv(url), usv(base));
    if (parts === null) {
      throw new TypeError("Invalid URL: " + JSON.stringify(String(url)) + (base === undefined ? "" : " against base " + JSON.stringify(String(base))));
    }
    return parts;
  }

  class URL {
    constructor(url, base) {
      if (arguments.length < 1) throw new TypeError("URL constructor: at least 1 argument required");
      urls.set(this, { parts: parseOrThrow(url, base), params: null });
    }
    static canParse(url, base) {
      return (base === undefined ? urlParse(usv(url)) : urlParse(usv(url), usv(base))) !== null;
    }
    static parse(url, base) {
      try { return new URL(url, base); } catch { return null; }
    }
    static createObjectURL() { throw new TypeError("URL.createObjectURL is not available in the wrepl sandbox (there is no document to hold blob: URLs)"); }
    static revokeObjectURL() {}
    get href() { return state(this).parts[HREF]; }
    set href(v) {
      const s = state(this);
      const parts = urlSet(s.parts[HREF], "href", usv(v));
      if (parts === null) throw new TypeError("Invalid URL: " + JSON.stringify(String(v)));
      s.parts = parts;
      reparse(s);
    }
    get origin() { return state(this).parts[ORIGIN]; }
    get protocol() { return state(this).parts[PROTOCOL]; }
    set protocol(v) { setPart(this, "protocol", v); }
    get username() { return state(this).parts[USERNAME]; }
    set username(v) { setPart(this, "username", v); }
    get password() { return state(this).parts[PASSWORD]; }
    set password(v) { setPart(this, "password", v); }
    get host() { return state(this).parts[HOST]; }
    set host(v) { setPart(this, "host", v); }
    get hostname() { return state(this).parts[HOSTNAME]; }
    set hostname(v) { setPart(this, "hostname", v); }
    get port() { return state(this).parts[PORT]; }
    set port(v) { setPart(this, "port", v); }
    get pathname() { return state(this).parts[PATHNAME]; }
    set pathname(v) { setPart(this, "pathname", v); }
    get search() { return state(this).parts[SEARCH]; }
    set search(v) { setPart(this, "search", v); reparse(state(this)); }
    get searchParams() {
      const s = state(this);
      if (s.params === null) {
        // Its list is the query's (not the constructor's, which would drop
        // a second leading "?").
        s.params = new URLSearchParams();
        plist(s.params).url = this;
        reparse(s);
      }
      return s.params;
    }
    get hash() { return state(this).parts[HASH]; }
    set hash(v) { setPart(this, "hash", v); }
    toString() { return state(this).parts[HREF]; }
    toJSON() { return state(this).parts[HREF]; }
  }
  function setPart(url, part, v) {
    const s = state(url);
    const parts = urlSet(s.parts[HREF], part, usv(v));
    if (parts !== null) s.parts = parts;
  }
  for (const C of [URL, URLSearchParams]) {
    Reflect.defineProperty(C.prototype, Symbol.toStringTag, { value: C.name, configurable: true });
    for (const k of Reflect.ownKeys(C.prototype)) {
      const d = Reflect.getOwnPropertyDescriptor(C.prototype, k);
      if (k !== "constructor") { d.enumerable = typeof k === "string"; Reflect.defineProperty(C.prototype, k, d); }
    }
  }
  return { URL, URLSearchParams };
})
