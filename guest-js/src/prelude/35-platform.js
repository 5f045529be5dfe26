  // ---- web-platform globals, loaded on first use -----------------------------
  // Each name below is an accessor on the global object until a script
  // touches it: then its group (a `platform/*.js` file, see platform.rs) is
  // compiled and run, and the group's globals become ordinary data
  // properties, which scripts may replace as in a browser. A context that
  // never uses them keeps the booted heap unchanged.
  const platformNatives = native.platform;
  const platformGroup = native.platformGroup;
  const groups = { __proto__: null };
  const LOADING = {};
  function loadGroup(name) {
    let g = groups[name];
    if (g === LOADING) throw new SandboxError("the platform group " + name + " needs itself while it loads");
    if (g === undefined) {
      groups[name] = LOADING;
      try {
        g = platformGroup(name)(platformNatives, loadGroup);
      } catch (e) {
        groups[name] = undefined;
        throw e;
      }
      groups[name] = g;
    }
    return g;
  }
  const LAZY = {
    __proto__: null,
    URL: "url", URLSearchParams: "url",
    TextEncoder: "encoding", TextDecoder: "encoding",
    crypto: "crypto", Crypto: "crypto", SubtleCrypto: "crypto", CryptoKey: "crypto",
    Event: "events", EventTarget: "events", CustomEvent: "events", AbortController: "events", AbortSignal: "events",
    structuredClone: "clone",
    fetch: "fetch", Headers: "fetch", Request: "fetch", Response: "fetch", Blob: "fetch", File: "fetch", FormData: "fetch",
    Intl: "intl",
  };
  const lazyGetters = { __proto__: null };
  // Install every global of `group` that still holds its lazy accessor.
  function installGroup(group) {
    const exports = loadGroup(group);
    for (const name in LAZY) {
      if (LAZY[name] !== group) continue;
      const d = ObjectGetOwnDesc(G, name);
      if (d !== undefined && d.get === lazyGetters[name]) ObjectDefine(G, name, dataDesc(exports[name]));
    }
    return exports;
  }
  for (const name in LAZY) {
    const group = LAZY[name];
    const get = { [name]() { return installGroup(group)[name]; } }[name];
    lazyGetters[name] = get;
    ObjectDefine(G, name, {
      __proto__: null, get, set(v) { ObjectDefine(G, name, dataDesc(v)); }, configurable: true, enumerable: false,
    });
  }

