  // ---- console ------------------------------------------------------------
  function fmt(args, prefix) {
    let s = prefix;
    for (let i = 0; i < args.length; i++) {
      if (i || prefix) s += " ";
      const a = args[i];
      s += typeof a === "string" ? a : safeText(a);
    }
    return s + "\n";
  }
  function write(stream, text) { nativeWrite(stream, wellFormed(text)); }
  const counts = new MapCtor();
  const consoleObj = {
    log(...a) { write(1, fmt(a, "")); },
    info(...a) { write(1, fmt(a, "")); },
    debug(...a) { write(1, fmt(a, "")); },
    trace(...a) { write(2, fmt(a, "")); },
    warn(...a) { write(2, fmt(a, "")); },
    error(...a) { write(2, fmt(a, "")); },
    dir(v) { write(1, fmt([v], "")); },
    table(v) { write(1, fmt([v], "")); },
    assert(c, ...a) { if (!c) write(2, fmt(a, "Assertion failed:")); },
    count(label = "default") {
      const key = safeText(label);
      const n = (call(MapGet, counts, key) || 0) + 1;
      call(MapSet, counts, key, n);
      write(1, key + ": " + n + "\n");
    },
  };
  define("console", consoleObj);

  // ---- timers -------------------------------------------------------------
  const timers = new MapCtor();
  let nextTimer = 1;
  function armTimer(fn, ms, args, repeat) {
    if (typeof fn !== "function") throw new TypeError("the timer callback must be a function");
    const id = nextTimer++;
    if (nextTimer > 0x7fffffff) nextTimer = 1;
    ms = NumberCtor(ms);
    if (!(ms >= 0)) ms = 0;
    if (!nativeSetTimer(id, ms)) throw new RangeError("too many timers are armed (limit 10000)");
    call(MapSet, timers, id, { __proto__: null, fn, args, ms, repeat });
    return id;
  }
  function clearTimer(id) {
    id = NumberCtor(id);
    if (call(MapDelete, timers, id)) nativeClearTimer(id);
  }
  define("setTimeout", function setTimeout(fn, ms, ...args) { return armTimer(fn, ms, args, false); });
  define("setInterval", function setInterval(fn, ms, ...args) { return armTimer(fn, ms, args, true); });
  define("clearTimeout", clearTimer);
  define("clearInterval", clearTimer);
  define("queueMicrotask", function queueMicrotask(fn) {
    if (typeof fn !== "function") throw new TypeError("queueMicrotask needs a function");
    settle(new PromiseCtor((resolve) => resolve()), () => { fn(); }, undefined);
  });

  // ---- base64 -------------------------------------------------------------
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (typeof G.btoa !== "function") {
    define("btoa", function btoa(s) {
      s = StringCtor(s);
      let out = "";
      for (let i = 0; i < s.length; i += 3) {
        const a = s.charCodeAt(i), b = s.charCodeAt(i + 1), c = s.charCodeAt(i + 2);
        if (a > 255 || b > 255 || c > 255) throw new SandboxError("btoa: the string contains characters outside Latin-1");
        const n = (a << 16) | ((b || 0) << 8) | (c || 0);
        out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63] +
          (i + 1 < s.length ? B64[(n >> 6) & 63] : "=") + (i + 2 < s.length ? B64[n & 63] : "=");
      }
      return out;
    });
  }
  if (typeof G.atob !== "function") {
    define("atob", function atob(s) {
      s = StringCtor(s).replace(/[\t\n\f\r ]+/g, "");
      if (s.length % 4 === 0) s = s.replace(/==?$/, "");
      if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) throw new SandboxError("atob: invalid base64 input");
      let out = "", bits = 0, acc = 0;
      for (let i = 0; i < s.length; i++) {
        acc = (acc << 6) | B64.indexOf(s[i]); bits += 6;
        if (bits >= 8) { bits -= 8; out += StringCtor.fromCharCode((acc >> bits) & 255); }
      }
      return out;
    });
  }

