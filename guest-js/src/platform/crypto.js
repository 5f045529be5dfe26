// crypto (Web Crypto): getRandomValues, randomUUID, and crypto.subtle's
// digest (SHA-1/256/384/512) and HMAC (importKey, exportKey, generateKey,
// sign, verify). Random bytes come from platform.randomFill, which keys
// ChaCha20 with the host's recorded random draws: a resumed session sees the
// same values. Other algorithms reject with NotSupportedError.
(function (platform, load) {
  "use strict";
  const randomFill = platform.randomFill, nativeDigest = platform.digest;
  const nativeHmac = platform.hmac, nativeHmacVerify = platform.hmacVerify;
  const DOMExceptionCtor = globalThis.DOMException;
  const Uint8ArrayCtor = Uint8Array;
  const PromiseCtor = Promise;
  const ArrayBufferIsView = ArrayBuffer.isView;
  const HASHES = { "SHA-1": [160, 512], "SHA-256": [256, 512], "SHA-384": [384, 1024], "SHA-512": [512, 1024] };
  const ILLEGAL = "Illegal constructor";
  let constructing = false;
  function dom(message, name) { return new DOMExceptionCtor(message, name); }

  // ---- getRandomValues / randomUUID ----------------------------------------
  const INTEGER_ARRAYS = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
    BigInt64Array, BigUint64Array];
  function getRandomValues(array) {
    if (!INTEGER_ARRAYS.some((C) => array instanceof C)) {
      throw dom("crypto.getRandomValues: the argument must be an integer typed array", "TypeMismatchError");
    }
    if (array.byteLength > 65536) {
      throw dom("crypto.getRandomValues: the array is " + array.byteLength + " bytes, more than the 65,536 one call may fill", "QuotaExceededError");
    }
    randomFill(new Uint8ArrayCtor(array.buffer, array.byteOffset, array.byteLength));
    return array;
  }
  const HEX = [];
  for (let i = 0; i < 256; i++) HEX.push((i < 16 ? "0" : "") + i.toString(16));
  function randomUUID() {
    const b = new Uint8ArrayCtor(16);
    randomFill(b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let s = "";
    for (let i = 0; i < 16; i++) s += (i === 4 || i === 6 || i === 8 || i === 10 ? "-" : "") + HEX[b[i]];
    return s;
  }

  // ---- subtle --------------------------------------------------------------
  function bytes(data, what) {
    if (data instanceof ArrayBuffer) return new Uint8ArrayCtor(data.slice(0));
    if (ArrayBufferIsView(data)) return new Uint8ArrayCtor(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
    throw new TypeError(what + " must be an ArrayBuffer or an ArrayBuffer view");
  }
  function algName(alg, what) {
    const name = typeof alg === "string" ? alg : alg !== null && typeof alg === "object" ? alg.name : undefined;
    if (typeof name !== "string") throw new TypeError(what + ": the algorithm must be a string or an object with a name");
    return name;
  }
  function hashName(alg, what) {
    const name = algName(alg, what).toUpperCase();
    if (!Object.hasOwn(HASHES, name)) {
      throw dom(what + ": the hash " + JSON.stringify(algName(alg, what)) + " is not supported (SHA-1, SHA-256, SHA-384 and SHA-512 are)", "NotSupportedError");
    }
    return name;
  }
  // Run `f` and give its result, or its error, as a promise (the methods of
  // SubtleCrypto never throw synchronously).
  function promised(f) {
    return new PromiseCtor((resolve) => resolve(f()));
  }

  const keys = new WeakMap(); // CryptoKey -> { raw: Uint8Array, hash, type, extractable, algorithm, usages }
  class CryptoKey {
    constructor() { if (!constructing) throw new TypeError(ILLEGAL); }
    get type() { return keyState(this).type; }
    get extractable() { return keyState(this).extractable; }
    get algorithm() { return keyState(this).algorithm; }
    get usages() { return keyState(this).usages.slice(); }
  }
  function keyState(k) {
    const s = keys.get(k);
    if (s === undefined) throw new TypeError("Illegal invocation: not a CryptoKey");
    return s;
  }
  function newKey(raw, hash, extractable, usages) {
    constructing = true;
    let key;
    try { key = new CryptoKey(); } finally { constructing = false; }
    const algorithm = Object.freeze({ name: "HMAC", hash: Object.freeze({ name: hash }), length: raw.length * 8 });
    keys.set(key, { raw, hash, type: "secret", extractable: !!extractable, algorithm, usages });
    return key;
  }
  function hmacUsages(usages, what) {
    const list = [...usages].map(String);
    for (const u of list) {
      if (u !== "sign" && u !== "verify") throw dom(what + ": an HMAC key can be used to sign and verify, not to " + u, "SyntaxError");
    }
    return [...new Set(list)];
  }
  function isHmac(alg, what) {
    const name = algName(alg, what);
    if (name.toUpperCase() !== "HMAC") {
      throw dom(what + ": the algorithm " + JSON.stringify(name) + " is not supported (the wrepl sandbox has HMAC; digests through crypto.subtle.digest)", "NotSupportedError");
    }
  }
  function usableFor(key, usage, what) {
    const s = keyState(key);
    if (!s.usages.includes(usage)) throw dom(what + ": the key's usages do not include " + usage, "InvalidAccessError");
    return s;
  }
  function base64url(u8) {
    return platform.base64Encode(u8).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function fromBase64url(s) {
    if (/[^A-Za-z0-9_-]/.test(s)) throw dom("importKey: the JWK's k is not base64url", "DataError");
    return platform.base64Decode(s.replace(/-/g, "+").replace(/_/g, "/"));
  }

  class SubtleCrypto {
    constructor() { if (!constructing) throw new TypeError(ILLEGAL); }
    digest(algorithm, data) {
      return promised(() => nativeDigest(hashName(algorithm, "digest"), bytes(data, "digest: the data")));
    }
    importKey(format, keyData, algorithm, extractable, keyUsages) {
      return promised(() => {
        isHmac(algorithm, "importKey");
        let raw, hash = hashName(algorithm.hash, "importKey");
        if (format === "raw") raw = bytes(keyData, "importKey: the key data");
        else if (format === "jwk") {
          if (keyData === null || typeof keyData !== "object" || keyData.kty !== "oct" || typeof keyData.k !== "string") {
            throw new TypeError("importKey: a JWK HMAC key needs kty \"oct\" and k");
          }
          raw = fromBase64url(keyData.k);
        } else {
          throw dom("importKey: the format " + JSON.stringify(String(format)) + " is not supported for HMAC (raw and jwk are)", "NotSupportedError");
        }
        if (raw.length === 0) throw dom("importKey: an HMAC key must not be empty", "DataError");
        if (algorithm.length !== undefined && algorithm.length !== raw.length * 8) {
          throw dom("importKey: the length does not match the key data", "DataError");
        }
        return newKey(raw, hash, extractable, hmacUsages(keyUsages, "importKey"));
      });
    }
    exportKey(format, key) {
      return promised(() => {
        const s = keyState(key);
        if (!s.extractable) throw dom("exportKey: the key is not extractable", "InvalidAccessError");
        if (format === "raw") return s.raw.slice().buffer;
        if (format === "jwk") {
          return { kty: "oct", k: base64url(s.raw), alg: "HS" + s.hash.slice(4), ext: true, key_ops: s.usages.slice() };
        }
        throw dom("exportKey: the format " + JSON.stringify(String(format)) + " is not supported (raw and jwk are)", "NotSupportedError");
      });
    }
    generateKey(algorithm, extractable, keyUsages) {
      return promised(() => {
        isHmac(algorithm, "generateKey");
        const hash = hashName(algorithm.hash, "generateKey");
        const bits = algorithm.length === undefined ? HASHES[hash][1] : Number(algorithm.length);
        if (!(bits > 0) || bits % 8 !== 0) throw dom("generateKey: the length must be a positive multiple of 8", "OperationError");
        const raw = new Uint8ArrayCtor(bits / 8);
        for (let i = 0; i < raw.length; i += 65536) randomFill(raw.subarray(i, i + 65536));
        return newKey(raw, hash, extractable, hmacUsages(keyUsages, "generateKey"));
      });
    }
    sign(algorithm, key, data) {
      return promised(() => {
        isHmac(algorithm, "sign");
        const s = usableFor(key, "sign", "sign");
        return nativeHmac(s.hash, s.raw, bytes(data, "sign: the data"));
      });
    }
    verify(algorithm, key, signature, data) {
      return promised(() => {
        isHmac(algorithm, "verify");
        const s = usableFor(key, "verify", "verify");
        return nativeHmacVerify(s.hash, s.raw, bytes(signature, "verify: the signature"), bytes(data, "verify: the data"));
      });
    }
  }
  for (const name of ["encrypt", "decrypt", "deriveBits", "deriveKey", "wrapKey", "unwrapKey"]) {
    Reflect.defineProperty(SubtleCrypto.prototype, name, {
      value: { [name]() {
        return PromiseCtor.reject(dom("crypto.subtle." + name + " is not supported in the wrepl sandbox (digest and HMAC sign/verify are)", "NotSupportedError"));
      } }[name],
      writable: true, configurable: true, enumerable: true,
    });
  }

  class Crypto {
    constructor() { if (!constructing) throw new TypeError(ILLEGAL); }
    get subtle() { return subtle; }
    getRandomValues(array) { return getRandomValues(array); }
    randomUUID() { return randomUUID(); }
  }
  constructing = true;
  let subtle, crypto;
  try {
    subtle = new SubtleCrypto();
    crypto = new Crypto();
  } finally {
    constructing = false;
  }
  for (const C of [Crypto, SubtleCrypto, CryptoKey]) {
    Reflect.defineProperty(C.prototype, Symbol.toStringTag, { value: C.name, configurable: true });
    for (const k of Object.getOwnPropertyNames(C.prototype)) {
      if (k === "constructor") continue;
      const d = Reflect.getOwnPropertyDescriptor(C.prototype, k);
      d.enumerable = true;
      Reflect.defineProperty(C.prototype, k, d);
    }
  }
  return { crypto, Crypto, SubtleCrypto, CryptoKey };
})
