// A second host for the wrepl guest component, in JavaScript on Node.js.
//
// jco transpiles the committed component (build.mjs: gen/guest.js); this
// module answers its imports (`wrepl:sandbox/calls` and `wrepl:sandbox/host`,
// see wit/README.md) and drives its `repl` export:
//
//   import { createSandbox } from "./wrepl-host.mjs";
//   const sandbox = await createSandbox({ tools: { add: async ({ a, b }) => a + b } });
//   const r = await sandbox.eval("var x = await add({a: 40, b: 2}); x");
//   console.log(r.value); // 42
//
// Tools are async JavaScript functions taking the parsed input. The guest's
// blocking `next-completion` import suspends the guest through JSPI
// (WebAssembly.Suspending; on by default in the Node.js 26 build package.json installs).
// There is no fuel and no epoch here: `should-interrupt`, answered from a
// deadline, is what stops a script (see wit/README.md, "Budgets").

import { readFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));

/** Most inner calls in flight at once (as the Rust host). */
const MAX_CALLS_IN_FLIGHT = 1024;
/** Most timers armed at once. */
const MAX_TIMERS = 10000;
/** Most console bytes kept per evaluation. */
const MAX_CONSOLE_BYTES = 50 * 1024 * 1024;
/** Largest input or result, in bytes of JSON text. */
const MAX_JSON_BYTES = 64 * 1024 * 1024;
/** A registered tool's name. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,111}$/;

/** Compiled core modules, by path. */
const compiled = new Map();

/** A call's failure as the guest sees it (`call-error`). */
function callError(kind, message) {
  return { kind, message: String(message).slice(0, 1 << 20) };
}

/**
 * A sandbox: one guest instance with its own persistent global scope.
 *
 * @param {object} [options]
 * @param {Record<string, (input: any) => Promise<any>>} [options.tools] tools by name; each
 *   becomes a global of that name in the sandbox.
 * @param {number} [options.timeoutMs] budget per evaluation, default 30000: wall clock here (tool time
 *   included), where wrepl's own host counts script time only.
 * @param {number} [options.memoryLimit] QuickJS heap limit in bytes, default 256 MiB.
 * @param {number} [options.stackLimit] QuickJS stack limit in bytes, default 256 KiB.
 * @param {string} [options.repoHint] the global `repoHint` (empty: none).
 * @param {string} [options.registeredPrefix] the prefix `registerTool` names tools with for a model
 *   (default "eval_registered__", as wrepl's own host).
 * @param {{global: string, form: string, tool: string}[]} [options.shorthands] shorthand globals
 *   (`form` is one of the WIT `shorthand-form` cases, e.g. `{global: "cat", form: "read", tool: "Read"}`);
 *   default none.
 * @param {string} [options.genDir] where build.mjs put the transpiled guest (default: $WREPL_GUEST_GEN, else gen/).
 */
export async function createSandbox(options = {}) {
  const tools = options.tools ?? {};
  const timeoutMs = options.timeoutMs ?? 30000;
  const genDir = options.genDir ?? process.env.WREPL_GUEST_GEN ?? join(here, "gen");

  // State of the evaluation in progress.
  let deadline = Infinity;
  let interrupted = false;
  let stdout = "";
  let stderr = "";
  let consoleBytes = 0;
  const callLog = [];
  // In-flight calls by id, completions ready to deliver, armed timers.
  let nextId = 1;
  const inFlight = new Map();
  const ready = [];
  const timers = new Map();
  let wake = null;
  const registered = new Map();

  function deliver(completion) {
    ready.push(completion);
    if (wake) {
      const w = wake;
      wake = null;
      w();
    }
  }

  function shouldInterrupt() {
    if (!interrupted && Date.now() >= deadline) interrupted = true;
    return interrupted;
  }

  const calls = {
    startCall(tool, input) {
      if (!Object.hasOwn(tools, tool)) throw callError("unknown-tool", `unknown tool ${JSON.stringify(tool)}`);
      if (inFlight.size >= MAX_CALLS_IN_FLIGHT) {
        throw callError("too-many-calls", `at most ${MAX_CALLS_IN_FLIGHT} calls may be in flight`);
      }
      if (input.length > MAX_JSON_BYTES) throw callError("invalid-input", "the input is over 64 MiB");
      let parsed;
      try {
        parsed = JSON.parse(input);
      } catch (e) {
        throw callError("invalid-input", `the input is not JSON: ${e.message}`);
      }
      const id = nextId++;
      const record = { tool, input: parsed };
      callLog.push(record);
      inFlight.set(id, record);
      Promise.resolve()
        .then(() => tools[tool](parsed))
        .then(
          (value) => {
            if (!inFlight.delete(id)) return;
            const json = JSON.stringify(value === undefined ? null : value);
            record.result = value === undefined ? null : value;
            deliver({ tag: "call", val: { id, outcome: { tag: "ok", val: json } } });
          },
          (err) => {
            if (!inFlight.delete(id)) return;
            const e = callError(err?.kind ?? "failed", err?.message ?? String(err));
            record.error = e;
            deliver({ tag: "call", val: { id, outcome: { tag: "err", val: e } } });
          },
        );
      return id;
    },
    // Blocks the guest (JSPI suspends it) until something completes.
    async nextCompletion() {
      for (;;) {
        if (shouldInterrupt()) return { tag: "interrupted" };
        if (ready.length > 0) return ready.shift();
        if (inFlight.size === 0 && timers.size === 0) return undefined;
        // Wait for a completion, or for the deadline (then `interrupted`).
        const left = deadline - Date.now();
        let timer;
        await new Promise((resolve) => {
          wake = resolve;
          if (Number.isFinite(left)) timer = setTimeout(resolve, Math.max(0, left) + 1);
        });
        clearTimeout(timer);
        wake = null;
      }
    },
    cancelCall(id) {
      inFlight.delete(id);
    },
  };

  const host = {
    nowUs: () => Date.now() * 1000,
    randomU64: () => randomBytes(8).readBigUInt64LE(0),
    consoleWrite(target, text) {
      if (consoleBytes >= MAX_CONSOLE_BYTES) return;
      consoleBytes += Buffer.byteLength(text);
      if (consoleBytes > MAX_CONSOLE_BYTES) text = "\n[console output truncated]\n";
      if (target === "stderr") stderr += text;
      else stdout += text;
    },
    setTimer(id, delayMs) {
      if (!timers.has(id) && timers.size >= MAX_TIMERS) return false;
      clearTimeout(timers.get(id));
      timers.set(
        id,
        setTimeout(() => {
          timers.delete(id);
          deliver({ tag: "timer", val: id });
        }, delayMs),
      );
      return true;
    },
    clearTimer(id) {
      clearTimeout(timers.get(id));
      timers.delete(id);
    },
    shouldInterrupt,
    registerTool(name, description, schema, displayName) {
      if (!TOOL_NAME.test(name)) throw `invalid tool name ${JSON.stringify(name)}`;
      if (description.length > 10000) throw "the description is over 10000 characters";
      if (schema.length > 65536) throw "the schema is over 64 KiB";
      let parsed;
      try {
        parsed = JSON.parse(schema);
      } catch {
        throw "the schema is not JSON";
      }
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw "the schema must be an object";
      if (!registered.has(name) && registered.size >= 100) throw "at most 100 tools may be registered";
      registered.set(name, { name, description, schema: parsed, displayName });
    },
    unregisterTool(name) {
      return registered.delete(name);
    },
  };

  const { instantiate } = await import(join(genDir, "guest.js"));
  // Compiled once per process; each sandbox is a new instance.
  const compile = (name) => {
    const path = join(genDir, name);
    if (!compiled.has(path)) compiled.set(path, readFile(path).then((bytes) => WebAssembly.compile(bytes)));
    return compiled.get(path);
  };
  const imports = { "wrepl:sandbox/calls": calls, "wrepl:sandbox/host": host };
  // The types interface has no functions.
  imports["wrepl:sandbox/types"] = {};
  const root = await instantiate(compile, imports);
  const repl = root.repl;
  await repl.init({
    memoryLimit: BigInt(options.memoryLimit ?? 256 * 1024 * 1024),
    stackLimit: options.stackLimit ?? 256 * 1024,
    tools: Object.keys(tools).map((name) => ({ name, global: name })),
    repoHint: options.repoHint ?? "",
    registeredPrefix: options.registeredPrefix ?? "eval_registered__",
    shorthands: options.shorthands ?? [],
    callsInFlight: MAX_CALLS_IN_FLIGHT,
  });

  let busy = false;
  return {
    /** Tools the sandbox's scripts registered, by name. */
    registered,
    /**
     * Evaluate `code` in the sandbox's persistent scope. Resolves to
     * `{ value, text, error, interrupted, heapExhausted, poisoned, stdout, stderr, calls }`.
     */
    async eval(code, { timeoutMs: budget = timeoutMs } = {}) {
      if (busy) throw new Error("the sandbox is evaluating already: one evaluation at a time");
      busy = true;
      deadline = Date.now() + budget;
      interrupted = false;
      stdout = "";
      stderr = "";
      consoleBytes = 0;
      callLog.length = 0;
      try {
        const out = await repl.eval(code);
        return {
          value: out.valueJson === undefined ? undefined : JSON.parse(out.valueJson),
          text: out.text,
          error: out.error,
          interrupted: out.interrupted,
          heapExhausted: out.heapExhausted,
          poisoned: out.poisoned,
          stdout,
          stderr,
          calls: callLog.map((c) => ({ ...c })),
        };
      } finally {
        // Nothing outlives the evaluation: calls are forgotten (their
        // completions are never delivered) and timers cleared.
        inFlight.clear();
        ready.length = 0;
        for (const t of timers.values()) clearTimeout(t);
        timers.clear();
        deadline = Infinity;
        busy = false;
      }
    },
  };
}
