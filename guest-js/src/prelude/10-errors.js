  // ---- errors -------------------------------------------------------------
  class SandboxError extends ErrorCtor {
    constructor(message) { super(message); this.name = "SandboxError"; }
  }
  class UnawaitedPromiseError extends TypeError {
    constructor(hint) {
      super("a Promise was used as a " + hint + " value: it has not been awaited. " +
        "Write `await <expression>` (or `await Promise.all([...])`) to use its result.");
      this.name = "UnawaitedPromiseError";
    }
  }
  define("SandboxError", SandboxError);
  define("UnawaitedPromiseError", UnawaitedPromiseError);
  ObjectDefine(PromiseCtor.prototype, Symbol.toPrimitive, {
    value: function (hint) { throw new UnawaitedPromiseError(hint === "number" ? "number" : "string"); },
    writable: true, configurable: true, enumerable: false,
  });
  ObjectDefine(PromiseCtor.prototype, "toString", {
    value: function () { throw new UnawaitedPromiseError("string"); },
    writable: true, configurable: true, enumerable: false,
  });

  // ---- sealed: no modules, no WebAssembly ----------------------------------
  define("require", function require() { throw new SandboxError(SEALED); });
  delete G.WebAssembly;
  Math.random = native.random;

