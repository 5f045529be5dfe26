// @global URL,URLSearchParams
/** A WHATWG URL (parsed by the `url` crate). */
declare class URL {
  constructor(url: string | URL, base?: string | URL);
  static canParse(url: string | URL, base?: string | URL): boolean;
  static parse(url: string | URL, base?: string | URL): URL | null;
  href: string;
  readonly origin: string;
  protocol: string;
  username: string;
  password: string;
  host: string;
  hostname: string;
  port: string;
  pathname: string;
  search: string;
  readonly searchParams: URLSearchParams;
  hash: string;
  toString(): string;
  toJSON(): string;
}
declare class URLSearchParams {
  constructor(init?: string | [string, string][] | Record<string, string> | URLSearchParams);
  readonly size: number;
  append(name: string, value: string): void;
  delete(name: string, value?: string): void;
  get(name: string): string | null;
  getAll(name: string): string[];
  has(name: string, value?: string): boolean;
  set(name: string, value: string): void;
  sort(): void;
  forEach(callback: (value: string, key: string, parent: URLSearchParams) => void, thisArg?: unknown): void;
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
  toString(): string;
}
// @global TextEncoder,TextDecoder
/** UTF-8 encoding (the only encoding the sandbox has). */
declare class TextEncoder {
  readonly encoding: "utf-8";
  encode(input?: string): Uint8Array;
  encodeInto(source: string, destination: Uint8Array): { read: number; written: number };
}
declare class TextDecoder {
  constructor(label?: "utf-8" | "utf8" | "unicode-1-1-utf-8", options?: { fatal?: boolean; ignoreBOM?: boolean });
  readonly encoding: "utf-8";
  readonly fatal: boolean;
  readonly ignoreBOM: boolean;
  decode(input?: ArrayBuffer | ArrayBufferView, options?: { stream?: boolean }): string;
}
// @global crypto,Crypto,SubtleCrypto,CryptoKey
/** An HMAC key of `crypto.subtle`. */
declare class CryptoKey {
  private constructor();
  readonly type: "secret";
  readonly extractable: boolean;
  readonly algorithm: { name: "HMAC"; hash: { name: string }; length: number };
  readonly usages: ("sign" | "verify")[];
}
type WreplHashName = "SHA-1" | "SHA-256" | "SHA-384" | "SHA-512";
type WreplHmacParams = { name: "HMAC"; hash: WreplHashName | { name: WreplHashName }; length?: number };
/** Digests (SHA-1/256/384/512) and HMAC; other algorithms reject with NotSupportedError. */
declare class SubtleCrypto {
  private constructor();
  digest(algorithm: WreplHashName | { name: WreplHashName }, data: ArrayBuffer | ArrayBufferView): Promise<ArrayBuffer>;
  importKey(format: "raw" | "jwk", keyData: ArrayBuffer | ArrayBufferView | { kty: "oct"; k: string }, algorithm: WreplHmacParams, extractable: boolean, keyUsages: ("sign" | "verify")[]): Promise<CryptoKey>;
  exportKey(format: "raw", key: CryptoKey): Promise<ArrayBuffer>;
  exportKey(format: "jwk", key: CryptoKey): Promise<{ kty: "oct"; k: string; alg: string; ext: boolean; key_ops: string[] }>;
  generateKey(algorithm: WreplHmacParams, extractable: boolean, keyUsages: ("sign" | "verify")[]): Promise<CryptoKey>;
  sign(algorithm: "HMAC" | { name: "HMAC" }, key: CryptoKey, data: ArrayBuffer | ArrayBufferView): Promise<ArrayBuffer>;
  verify(algorithm: "HMAC" | { name: "HMAC" }, key: CryptoKey, signature: ArrayBuffer | ArrayBufferView, data: ArrayBuffer | ArrayBufferView): Promise<boolean>;
}
/** Random values are recorded: a resumed session sees the same ones. */
declare class Crypto {
  private constructor();
  readonly subtle: SubtleCrypto;
  getRandomValues<T extends Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array>(array: T): T;
  randomUUID(): `${string}-${string}-${string}-${string}-${string}`;
}
declare var crypto: Crypto;
// @global Event,EventTarget,CustomEvent,AbortController,AbortSignal
declare class Event {
  constructor(type: string, init?: { bubbles?: boolean; cancelable?: boolean; composed?: boolean });
  readonly type: string;
  readonly target: EventTarget | null;
  readonly currentTarget: EventTarget | null;
  readonly eventPhase: number;
  readonly bubbles: boolean;
  readonly cancelable: boolean;
  readonly defaultPrevented: boolean;
  readonly composed: boolean;
  readonly isTrusted: boolean;
  readonly timeStamp: number;
  composedPath(): EventTarget[];
  preventDefault(): void;
  stopPropagation(): void;
  stopImmediatePropagation(): void;
  static readonly NONE: 0;
  static readonly CAPTURING_PHASE: 1;
  static readonly AT_TARGET: 2;
  static readonly BUBBLING_PHASE: 3;
}
declare class CustomEvent<T = unknown> extends Event {
  constructor(type: string, init?: { bubbles?: boolean; cancelable?: boolean; composed?: boolean; detail?: T });
  readonly detail: T;
}
type WreplListener = ((event: Event) => void) | { handleEvent(event: Event): void };
declare class EventTarget {
  constructor();
  addEventListener(type: string, listener: WreplListener | null, options?: boolean | { capture?: boolean; once?: boolean; passive?: boolean; signal?: AbortSignal }): void;
  removeEventListener(type: string, listener: WreplListener | null, options?: boolean | { capture?: boolean }): void;
  dispatchEvent(event: Event): boolean;
}
declare class AbortSignal extends EventTarget {
  private constructor();
  readonly aborted: boolean;
  readonly reason: unknown;
  onabort: ((event: Event) => void) | null;
  throwIfAborted(): void;
  static abort(reason?: unknown): AbortSignal;
  static timeout(ms: number): AbortSignal;
  static any(signals: AbortSignal[]): AbortSignal;
}
declare class AbortController {
  constructor();
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}
// @global structuredClone
/** A deep copy by the HTML structured clone algorithm (DataCloneError for functions and symbols). */
declare function structuredClone<T>(value: T, options?: { transfer?: ArrayBuffer[] }): T;
// @global Blob,File,FormData,Headers,Request,Response,fetch
declare class Blob {
  constructor(parts?: (string | ArrayBuffer | ArrayBufferView | Blob)[], options?: { type?: string; endings?: "transparent" | "native" });
  readonly size: number;
  readonly type: string;
  slice(start?: number, end?: number, contentType?: string): Blob;
  text(): Promise<string>;
  arrayBuffer(): Promise<ArrayBuffer>;
  bytes(): Promise<Uint8Array>;
}
declare class File extends Blob {
  constructor(parts: (string | ArrayBuffer | ArrayBufferView | Blob)[], name: string, options?: { type?: string; lastModified?: number });
  readonly name: string;
  readonly lastModified: number;
}
declare class FormData {
  constructor();
  append(name: string, value: string | Blob, filename?: string): void;
  delete(name: string): void;
  get(name: string): string | File | null;
  getAll(name: string): (string | File)[];
  has(name: string): boolean;
  set(name: string, value: string | Blob, filename?: string): void;
  forEach(callback: (value: string | File, key: string, parent: FormData) => void, thisArg?: unknown): void;
  entries(): IterableIterator<[string, string | File]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string | File>;
  [Symbol.iterator](): IterableIterator<[string, string | File]>;
}
type WreplHeadersInit = Headers | [string, string][] | Record<string, string>;
declare class Headers {
  constructor(init?: WreplHeadersInit);
  append(name: string, value: string): void;
  delete(name: string): void;
  get(name: string): string | null;
  getSetCookie(): string[];
  has(name: string): boolean;
  set(name: string, value: string): void;
  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void;
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}
type WreplBodyInit = string | ArrayBuffer | ArrayBufferView | Blob | URLSearchParams | FormData | null;
interface WreplBody {
  /** Streaming bodies are not available: read with text(), json(), arrayBuffer(), bytes() or blob(). */
  readonly body: null;
  readonly bodyUsed: boolean;
  text(): Promise<string>;
  json(): Promise<any>;
  arrayBuffer(): Promise<ArrayBuffer>;
  bytes(): Promise<Uint8Array>;
  blob(): Promise<Blob>;
  formData(): Promise<FormData>;
}
interface WreplRequestInit {
  method?: string;
  headers?: WreplHeadersInit;
  body?: WreplBodyInit;
  redirect?: "follow" | "error" | "manual";
  signal?: AbortSignal | null;
}
declare class Request implements WreplBody {
  constructor(input: string | URL | Request, init?: WreplRequestInit);
  readonly url: string;
  readonly method: string;
  readonly headers: Headers;
  readonly redirect: "follow" | "error" | "manual";
  readonly signal: AbortSignal;
  readonly body: null;
  readonly bodyUsed: boolean;
  text(): Promise<string>;
  json(): Promise<any>;
  arrayBuffer(): Promise<ArrayBuffer>;
  bytes(): Promise<Uint8Array>;
  blob(): Promise<Blob>;
  formData(): Promise<FormData>;
  clone(): Request;
}
declare class Response implements WreplBody {
  constructor(body?: WreplBodyInit, init?: { status?: number; statusText?: string; headers?: WreplHeadersInit });
  static error(): Response;
  static redirect(url: string | URL, status?: number): Response;
  static json(data: unknown, init?: { status?: number; statusText?: string; headers?: WreplHeadersInit }): Response;
  readonly url: string;
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly redirected: boolean;
  readonly type: "basic" | "default" | "error";
  readonly headers: Headers;
  readonly body: null;
  readonly bodyUsed: boolean;
  text(): Promise<string>;
  json(): Promise<any>;
  arrayBuffer(): Promise<ArrayBuffer>;
  bytes(): Promise<Uint8Array>;
  blob(): Promise<Blob>;
  formData(): Promise<FormData>;
  clone(): Response;
}
/**
 * An HTTP request through the WebFetch tool: every hop (redirect) is one call, checked against the
 * WebFetch(domain:HOST) rules and recorded (a resumed session gets the recorded response).
 */
declare function fetch(input: string | URL | Request, init?: WreplRequestInit): Promise<Response>;
