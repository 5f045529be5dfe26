  // ---- web-platform globals, loaded on first use -----------------------------
  // Each name below is an accessor on the global object until a script
  // touches it: then its group (a `platform/*.js` file, see platform.rs) is
  // compiled and run, and the group's globals become ordinary data
  // properties, which scripts may replace as in a browser. A context that
  // never uses them keeps the booted heap unchanged.
  // The natives the groups use are made at the first load, not at boot:
  // the booted heap every context maps stays as small as it can.
  const makePlatform = native.makePlatform;
  let platformNatives = null;
  const platformGroup = native.platformGroup;
  const groups = { __proto__: null };
  const LOADING = {};
  function loadGroup(name) {
    let g = groups[name];
    if (g === LOADING) throw new SandboxError("the platform group " + name + " needs itself while it loads");
    if (g === undefined) {
      groups[name] = LOADING;
      try {
        if (platformNatives === null) platformNatives = makePlatform();
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
  const LAZY_NAMES = ObjectKeys(LAZY);
  let lazyFns = null;
  // Install every global of `group` that still holds its lazy accessor.
  function installGroup(group) {
    const exports = loadGroup(group);
    for (let i = 0; i < LAZY_NAMES.length; i++) {
      const name = LAZY_NAMES[i];
      if (LAZY[name] !== group) continue;
      const d = ObjectGetOwnDesc(G, name);
      if (d !== undefined && d.get === lazyFns[i]) ObjectDefine(G, name, dataDesc(exports[name]));
    }
    return exports;
  }
  // The accessors' one hook (they are native: see platform.rs): a read
  // loads the name's group; a write makes the name an ordinary global.
  function lazyAccess(name, value, isSet) {
    if (isSet) {
      ObjectDefine(G, name, dataDesc(value));
      return undefined;
    }
    return installGroup(LAZY[name])[name];
  }
  lazyFns = native.defineLazy(lazyAccess, LAZY_NAMES);

