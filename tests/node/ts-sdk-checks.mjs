#!/usr/bin/env node
// End-to-end checks of `wrepl serve` with the official MCP TypeScript SDK.
//
// Usage:
//     node tests/node/ts-sdk-checks.mjs path/to/wrepl
//
// Run it with Node >= 20 (tests/it/ts_sdk.rs uses the Node.js 22 build that
// tests/node installs). Two generations of the SDK, both pinned in
// tests/node/package.json:
//
//   - `@modelcontextprotocol/sdk` (v1): its LATEST_PROTOCOL_VERSION is
//     2025-11-25 and its Client always offers that in `initialize`, so it
//     speaks 2025-11-25 with wrepl, nothing else.
//   - `@modelcontextprotocol/client` (v2, the line that replaces v1): the
//     `initialize` handshake ("legacy" era, 2025-11-25 by default, older
//     revisions when `supportedProtocolVersions` lists only them) and
//     2026-07-28 ("modern" era: `server/discover`, the `_meta` envelope,
//     input_required rounds) with `versionNegotiation`.
//
// Every configuration runs against its own server and workspace (`--root`):
// stdio is started by the SDK's StdioClientTransport; HTTP is
// `wrepl serve --http 127.0.0.1:0 --token-file F --store S`, its address read
// from the `wrepl: serving MCP at URL` line on stderr, reached with
// StreamableHTTPClientTransport and the bearer token in requestInit.headers.
//
// The full set of checks (sdk v1 at 2025-11-25, client v2 at 2025-11-25 and
// at 2026-07-28, each over stdio and over HTTP):
//   initialize    the negotiated revision, serverInfo, the tools capability
//                 and the instructions.
//   tools/list    `repl` is listed; its inputSchema and outputSchema compile
//                 with the SDK's own JSON Schema validator (Ajv); the input
//                 schema takes {code: '1+1'} and refuses a non-string or a
//                 missing `code`.
//   SDK check     the SDK's own outputSchema check is live: v1 holds a
//                 compiled validator for repl that refuses a wrong value;
//                 v2's callTool throws given a schema wrepl cannot meet.
//   every call    goes through the SDK's callTool, which checks
//                 structuredContent against the tool's outputSchema itself
//                 (v1 for error results as well); the script checks every
//                 structuredContent (error results included) once more
//                 with the SDK's validator.
//   1+1           result 2, not an error, text "2" (2026-07-28: then the
//                 `[context: HANDLE]` line).
//   throw         isError, with structuredContent.error {name, message}.
//   persistence   `let x = 41` then `x + 1` == 42: on the connection
//                 (2025-11-25), or by passing structuredContent.context
//                 (2026-07-28, where a call without it runs in a fresh
//                 context and the text's last line is `[context: HANDLE]`).
//   progress      `(await gl('*')).length` with onprogress (5 calls): on the
//                 wire, every notifications/progress of the call, the inner
//                 Glob call's start and complete among them, precedes its
//                 response, in increasing order; the callback gets no other.
//                 (It may get fewer: the SDKs drop a notification read
//                 together with the response, typescript-sdk issue #2580.)
//   sampling      `await haiku(...)` is answered by the client's
//                 sampling/createMessage handler (2026-07-28: an
//                 input_required round that the SDK drives).
//   elicitation   an accepting handler lets `put('a.txt','x')` write; a
//                 declining one gets Edit refused (isError), file unchanged.
//   registered    `registerTool('dbl', ...)`: eval_registered__dbl is listed
//                 and, after approval, returns 42.
//   cancellation  a call aborted (AbortSignal) after 1.5 s stops: the
//                 context answers the next call at once and a side effect
//                 due at 2.5 s never happens.
//   errors        an unknown tool is a protocol error; `repl` with a
//                 non-string `code` or without `code` gives isError.
//   session end   2025-11-25 over HTTP: the SDK's terminateSession (DELETE)
//                 succeeds.
// And besides:
//   auto          client v2 with versionNegotiation 'auto' settles on
//                 2026-07-28, over stdio and HTTP.
//   older         client v2 limited to 2025-06-18, 2025-03-26 or 2024-11-05
//                 (stdio and HTTP): wrepl answers that revision; tools/list,
//                 1+1 and a throw work.
//   async         `serve --async` over stdio, at 2025-11-25 (sdk v1 and
//                 client v2): the outputSchema has both shapes (anyOf), and
//                 the queued result and the result polled with repl_result
//                 pass the SDK's outputSchema check; at 2026-07-28 (client
//                 v2), which async mode leaves alone, the plain repl tool.
//   restart       client v2, 2026-07-28 over HTTP, manual input_required
//                 mode: a call that needs approval returns input_required;
//                 the server is killed and restarted on the same store; the
//                 retry with inputResponses and the echoed requestState
//                 completes on the new process and writes the file; a
//                 context handle from the first process continues.
//
// Prints `PASS`/`FAIL` per check (a failure with the last protocol messages
// of its connection), then the failed checks by name and exits 1, or
// "all checks passed" and exits 0. Every request is bounded (60 s), every
// check too (120 s); all servers this script starts are stopped at the end.

import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import {
  check as countedCheck, CheckFailed, expect, failures, HttpServer, report, runWithBinary, short, withTimeout,
} from './check-harness.mjs';

import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1Stdio } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as V1Http } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LATEST_PROTOCOL_VERSION as V1_LATEST,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator as V1Validator } from '@modelcontextprotocol/sdk/validation/ajv';
import {
  Client as V2Client,
  StreamableHTTPClientTransport as V2Http,
  LATEST_PROTOCOL_VERSION as V2_LATEST,
} from '@modelcontextprotocol/client';
import { StdioClientTransport as V2Stdio } from '@modelcontextprotocol/client/stdio';
import { AjvJsonSchemaValidator as V2Validator } from '@modelcontextprotocol/client/validators/ajv';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const OLDER = ['2025-06-18', '2025-03-26', '2024-11-05'];
const STEP_MS = 60_000;
const TOKEN = 'wrepl-ts-sdk-test-token-7d3e91';
const SAMPLE_REPLY = 'pong from the typescript sdk';
const PROGRESS_ROUNDS = 5;

/** Run one check (at most two steps long); on a failure, the connection's last messages. */
function check(label, what, fn, conn) {
  return countedCheck(label, what, fn, { timeoutMs: STEP_MS * 2, onFail: conn ? () => conn.dump() : undefined });
}

// --------------------------------------------------------------------------- clients

/**
 * The client side of one connection: a v1 or v2 Client, its transport, a
 * sampling and an elicitation handler with a switchable policy, and the last
 * protocol messages (for failure reports).
 */
class Conn {
  /**
   * @param {object} o
   * @param {'v1'|'v2'} o.sdk
   * @param {'stdio'|'http'} o.transport
   * @param {'legacy'|'auto'|{pin: string}} [o.mode] v2 version negotiation
   * @param {string[]} [o.versions] v2 supportedProtocolVersions
   * @param {boolean} [o.autoFulfill] v2 input_required auto-fulfilment
   */
  constructor(o) {
    Object.assign(this, o);
    this.log = [];
    this.approve = true;
    this.elicitations = []; // [wrepl/tool, message]
    this.samples = [];
    this.schemas = new Map(); // tool name -> outputSchema
    this.validator = o.sdk === 'v1' ? new V1Validator() : new V2Validator();
  }

  note(dir, msg) {
    this.seq = (this.seq ?? 0) + 1;
    this.log.push({ seq: this.seq, dir, msg });
    if (this.log.length > 400) this.log.shift();
  }

  dump() {
    const last = this.log.slice(-30);
    if (last.length === 0) return;
    console.log(`  last protocol messages (${last.length}):`);
    for (const { dir, msg } of last) console.log(`    ${dir} ${short(msg)}`);
  }

  /** Record every message through `transport` (send and onmessage). */
  tap(transport) {
    const send = transport.send.bind(transport);
    transport.send = (msg, opts) => {
      this.note('->', msg);
      return send(msg, opts);
    };
    let handler;
    Object.defineProperty(transport, 'onmessage', {
      configurable: true,
      get: () =>
        handler &&
        ((msg, extra) => {
          this.note('<-', msg);
          if (msg?.result?.protocolVersion && this.initVersion === undefined) this.initVersion = msg.result.protocolVersion;
          handler(msg, extra);
        }),
      set: (h) => {
        handler = h;
      },
    });
    return transport;
  }

  async sampling(params) {
    const texts = [];
    for (const m of params.messages ?? []) {
      for (const c of Array.isArray(m.content) ? m.content : [m.content]) if (c?.type === 'text') texts.push(c.text);
    }
    this.samples.push(texts.join('\n'));
    return { role: 'assistant', model: 'ts-sdk-test-model', content: { type: 'text', text: SAMPLE_REPLY } };
  }

  async elicitation(params) {
    if (this.refuseElicitation) throw new Error(`an elicitation reached a hand-driven round: ${short(params)}`);
    this.elicitations.push([String(params?._meta?.['wrepl/tool'] ?? ''), params?.message ?? '']);
    if (!params?.requestedSchema?.properties?.approve) {
      throw new Error(`elicitation without an \`approve\` field in its schema: ${short(params)}`);
    }
    return this.approve ? { action: 'accept', content: { approve: true } } : { action: 'decline' };
  }

  reset(approve = true) {
    this.approve = approve;
    this.elicitations = [];
    this.samples = [];
  }

  async connect({ binary, args, url, stderrLog }) {
    const info = { name: 'wrepl-ts-sdk-checks', version: '1.0.0' };
    const capabilities = { sampling: {}, elicitation: { form: {} } };
    let transport;
    if (this.sdk === 'v1') {
      this.client = new V1Client(info, { capabilities });
      this.client.setRequestHandler(CreateMessageRequestSchema, (req) => this.sampling(req.params));
      this.client.setRequestHandler(ElicitRequestSchema, (req) => this.elicitation(req.params));
      transport =
        this.transport === 'stdio'
          ? new V1Stdio({ command: binary, args, stderr: 'pipe' })
          : new V1Http(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } });
    } else {
      const options = { capabilities };
      if (this.mode) options.versionNegotiation = { mode: this.mode };
      if (this.versions) options.supportedProtocolVersions = this.versions;
      if (this.autoFulfill === false) options.inputRequired = { autoFulfill: false };
      this.client = new V2Client(info, options);
      this.client.setRequestHandler('sampling/createMessage', (req) => this.sampling(req.params));
      this.client.setRequestHandler('elicitation/create', (req) => this.elicitation(req.params));
      transport =
        this.transport === 'stdio'
          ? new V2Stdio({ command: binary, args, stderr: 'pipe' })
          : new V2Http(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } });
    }
    this.transportObj = this.tap(transport);
    if (this.transport === 'stdio' && stderrLog) {
      transport.stderr?.on('data', (chunk) => appendFileSync(stderrLog, chunk));
    }
    this.client.onerror = (err) => this.note('!!', `client error: ${err?.message ?? err}`);
    await this.client.connect(transport, { timeout: STEP_MS });
  }

  /** The revision the handshake settled on. */
  version() {
    return this.sdk === 'v2' ? this.client.getNegotiatedProtocolVersion() : this.initVersion;
  }

  era() {
    return this.sdk === 'v2' ? this.client.getProtocolEra() : 'legacy';
  }

  async listTools(refresh = false) {
    const options = { timeout: STEP_MS };
    if (this.sdk === 'v2' && refresh) options.cacheMode = 'refresh';
    const r = await this.client.listTools(undefined, options);
    for (const t of r.tools) if (t.outputSchema) this.schemas.set(t.name, t.outputSchema);
    return r;
  }

  /**
   * tools/call through the SDK's callTool (which checks structuredContent
   * against the outputSchema); then structuredContent is checked once more.
   */
  async call(name, args, extra = {}) {
    const params = { name, arguments: args, ...(extra.params ?? {}) };
    const options = { timeout: STEP_MS, ...extra.options };
    const r = this.sdk === 'v1' ? await this.client.callTool(params, undefined, options) : await this.client.callTool(params, options);
    const schema = this.schemas.get(name);
    if (schema && r && r.structuredContent !== undefined) {
      const v = this.validator.getValidator(schema)(r.structuredContent);
      expect(v.valid, `${name}: structuredContent does not match the outputSchema: ${v.errorMessage}: ${short(r)}`);
    }
    return r;
  }

  repl(code, context, extra) {
    const args = { code };
    if (context !== undefined && context !== null) args.context = context;
    return this.call('repl', args, extra);
  }

  async close() {
    try {
      await withTimeout(this.client?.close() ?? Promise.resolve(), 15_000, 'client.close');
    } catch (err) {
      console.log(`note: closing the client: ${err.message}`);
    }
  }
}

function textOf(result) {
  return (result.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
}

function sc(result) {
  expect(
    result.structuredContent && typeof result.structuredContent === 'object',
    `no structuredContent in ${short(result)}`,
  );
  return result.structuredContent;
}

/** A successful `repl` result: no error, a handle, and the handle line as the revision wants. */
function okResult(cfg, result, what) {
  expect(!result.isError, `${what}: unexpected isError: ${short(result)}`);
  const s = sc(result);
  expect(s.error === null || s.error === undefined, `${what}: script error ${short(s.error)}`);
  const handle = s.context;
  expect(typeof handle === 'string' && handle !== '', `${what}: no context handle in structuredContent`);
  const text = textOf(result);
  const last = text.replace(/\n+$/, '').split('\n').at(-1);
  if (cfg.modern) {
    expect(last === `[context: ${handle}]`, `${what}: the text does not end with '[context: ${handle}]': ${short(last)}`);
  } else {
    expect(!text.includes('[context:'), `${what}: a ${cfg.version} result names a handle: ${short(last)}`);
  }
  return s;
}

// --------------------------------------------------------------------------- configurations

class Config {
  constructor({ sdk, transport, version, mode, versions, workdir, binary }) {
    this.sdk = sdk;
    this.transport = transport;
    this.version = version;
    this.modern = version === MODERN;
    this.mode = mode;
    this.versions = versions;
    this.binary = binary;
    const pkg = sdk === 'v1' ? 'sdk' : 'client';
    this.label = `${pkg}/${transport}/${version}`;
    this.dir = join(workdir, `${pkg}-${transport}-${version}`);
    this.root = join(this.dir, 'root');
    mkdirSync(this.root, { recursive: true });
    this.tokenFile = join(this.dir, 'tokens');
    writeFileSync(this.tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    this.store = join(this.dir, 'sessions.sqlite3');
    this.log = join(this.dir, 'server.stderr');
    this.servers = [];
  }

  async startHttp() {
    const server = new HttpServer(
      this.binary,
      ['--root', this.root, '--token-file', this.tokenFile, '--store', this.store],
      this.log,
    );
    this.servers.push(server);
    this.url = await server.waitReady();
    return this.url;
  }

  conn(extra = {}) {
    return new Conn({ sdk: this.sdk, transport: this.transport, mode: this.mode, versions: this.versions, ...extra });
  }

  async open(conn, extraArgs = []) {
    await conn.connect({
      binary: this.binary,
      args: ['serve', '--root', this.root, ...extraArgs],
      url: this.url,
      stderrLog: this.log,
    });
    return conn;
  }

  logTail() {
    try {
      return readFileSync(this.log, 'utf8').split('\n').slice(-15).join('\n');
    } catch {
      return '(no server stderr)';
    }
  }

  async cleanup() {
    for (const s of this.servers) await s.stop();
  }
}

// --------------------------------------------------------------------------- checks

async function checkInitialize(cfg, c) {
  const v = c.version();
  expect(v === cfg.version, `negotiated ${short(v)}, expected ${cfg.version}`);
  if (c.sdk === 'v2') expect(c.era() === (cfg.modern ? 'modern' : 'legacy'), `era ${c.era()}`);
  const info = c.client.getServerVersion();
  expect(info?.name === 'wrepl', `serverInfo ${short(info)}`);
  const caps = c.client.getServerCapabilities();
  expect(caps?.tools, `no tools capability: ${short(caps)}`);
  const instructions = c.client.getInstructions();
  expect(typeof instructions === 'string' && instructions.includes('repl'), `instructions ${short(instructions)}`);
  return `initialize: negotiated ${v}, serverInfo ${info.name} ${info.version}`;
}

async function checkToolsList(cfg, c) {
  const { tools } = await c.listTools();
  const repl = tools.find((t) => t.name === 'repl');
  expect(repl, `no repl tool in ${short(tools.map((t) => t.name))}`);
  const input = repl.inputSchema;
  expect(input?.type === 'object', `inputSchema ${short(input)}`);
  expect(input.properties?.code?.type === 'string', `inputSchema.properties.code ${short(input.properties?.code)}`);
  expect((input.required ?? []).includes('code'), `inputSchema.required ${short(input.required)}`);
  const out = repl.outputSchema;
  expect(out?.type === 'object', `outputSchema ${short(out)}`);
  for (const key of ['result', 'stdout', 'stderr', 'error', 'context']) {
    expect(out.properties?.[key] !== undefined, `outputSchema has no property ${key}`);
  }
  let validateInput;
  try {
    validateInput = c.validator.getValidator(input);
    c.validator.getValidator(out);
  } catch (err) {
    throw new CheckFailed(`a repl schema does not compile with the SDK's validator: ${err.message}`);
  }
  expect(validateInput({ code: '1+1' }).valid, `inputSchema refuses {code: '1+1'}`);
  expect(!validateInput({ code: 5 }).valid, `inputSchema accepts {code: 5}`);
  expect(!validateInput({}).valid, `inputSchema accepts {}`);
  if (cfg.modern) expect(input.properties?.context?.type === 'string', `no string \`context\` in the inputSchema`);
  return `tools/list: repl with inputSchema and outputSchema (both compile with the SDK's Ajv validator)`;
}

/** The SDK's own check of structuredContent is live (a negative control). */
async function checkSdkValidates(cfg, c) {
  if (c.sdk === 'v1') {
    const validate = c.client.getToolOutputValidator('repl');
    expect(typeof validate === 'function', 'the SDK holds no output validator for repl after tools/list');
    expect(!validate({ stdout: 5 }).valid, "the SDK's repl validator accepts {stdout: 5}");
    return "the SDK compiled repl's outputSchema at tools/list and refuses a wrong structuredContent";
  }
  // Client v2 checks against `toolDefinition` when given one instead of the
  // listed tool: a schema wrepl's result cannot meet must make callTool throw.
  const { tools } = await c.listTools();
  const repl = tools.find((t) => t.name === 'repl');
  const impossible = {
    ...repl,
    outputSchema: { type: 'object', properties: { no_such_field: { type: 'string' } }, required: ['no_such_field'] },
  };
  let threw;
  try {
    await c.client.callTool({ name: 'repl', arguments: { code: '1' } }, { toolDefinition: impossible, timeout: STEP_MS });
  } catch (err) {
    threw = err;
  }
  expect(threw && /output schema/i.test(threw.message), `callTool did not check structuredContent: ${threw?.message ?? 'no error'}`);
  return 'callTool checks structuredContent against the outputSchema (it refused one wrepl cannot meet)';
}

async function checkOnePlusOne(cfg, c) {
  const r = await c.repl('1+1');
  const s = okResult(cfg, r, '1+1');
  expect(s.result === 2, `1+1 gave ${short(s.result)}`);
  expect(textOf(r).split('\n')[0] === '2', `the text of 1+1 is ${short(textOf(r))}`);
  return 'repl 1+1 == 2 (structuredContent checked by the SDK against the outputSchema)';
}

async function checkThrow(cfg, c) {
  const r = await c.repl('throw new TypeError("boom")');
  expect(r.isError === true, `a thrown error did not give isError: ${short(r)}`);
  const s = sc(r);
  expect(s.error?.name === 'TypeError' && s.error?.message === 'boom', `structuredContent.error ${short(s.error)}`);
  expect(textOf(r).includes('TypeError: boom'), `the text does not name the error: ${short(textOf(r))}`);
  return 'a thrown TypeError gives isError with structuredContent.error';
}

async function checkPersistence(cfg, c) {
  const s1 = okResult(cfg, await c.repl('let x = 41'), 'let x = 41');
  const handle = s1.context;
  if (!cfg.modern) {
    const s2 = okResult(cfg, await c.repl('x + 1'), 'x + 1');
    expect(s2.result === 42, `\`x + 1\` on the same connection gave ${short(s2.result)}`);
    return 'persistence: `let x = 41` then `x + 1` == 42 on the same connection';
  }
  const s2 = okResult(cfg, await c.repl('x + 1', handle), 'x + 1 (with the handle)');
  expect(s2.result === 42, `\`x + 1\` with the handle gave ${short(s2.result)}`);
  const s3 = okResult(cfg, await c.repl('typeof x'), 'typeof x (no handle)');
  expect(s3.result === 'undefined', `a call without \`context\` saw x: typeof x == ${short(s3.result)}`);
  expect(s3.context !== handle, 'a call without `context` returned the earlier handle');
  return 'persistence: `x + 1` == 42 via the context handle; no handle, a fresh context';
}

/**
 * The server must send every notifications/progress of a request before its
 * response. That is checked on the wire (the messages in the order the
 * transport handed them to the SDK): the SDKs run a notification's handler
 * a microtask later but settle a response at once, so a notification that
 * arrives in the same read as the response reaches no callback and is
 * reported as an "unknown token" (typescript-sdk issue #2580, open, v1 and
 * v2). The callback may therefore see fewer; it must see nothing else.
 */
async function checkProgress(cfg, c) {
  let total = 0;
  let delivered = 0;
  for (let round = 1; round <= PROGRESS_ROUNDS; round++) {
    const events = [];
    const mark = (c.seq ?? 0) + 1;
    const r = await c.repl("(await gl('*')).length", undefined, {
      options: { onprogress: (p) => events.push(p) },
    });
    const s = okResult(cfg, r, 'gl progress');
    expect(Number.isInteger(s.result), `(await gl('*')).length gave ${short(s.result)}`);
    const calls = (s.calls ?? []).filter((x) => x.type === 'tool_use');
    expect(calls.some((x) => x.name === 'Glob'), `no Glob call recorded: ${short(s.calls)}`);
    const wire = c.log.filter((e) => e.seq >= mark);
    const sent = wire.find((e) => e.dir === '->' && e.msg?.method === 'tools/call' && e.msg.params?.arguments?.code?.includes('gl('));
    expect(sent, 'the tools/call was not seen on the wire');
    const id = sent.msg.id;
    const token = sent.msg.params?._meta?.progressToken;
    expect(token !== undefined, `the SDK sent no progressToken: ${short(sent.msg)}`);
    const at = wire.findIndex((e) => e.dir === '<-' && e.msg?.id === id && ('result' in e.msg || 'error' in e.msg));
    expect(at >= 0, 'the response was not seen on the wire');
    const isOurs = (e) => e.dir === '<-' && e.msg?.method === 'notifications/progress' && e.msg.params?.progressToken === token;
    const before = wire.slice(0, at).filter(isOurs).map((e) => e.msg.params);
    const after = wire.slice(at + 1).filter(isOurs).map((e) => e.msg.params);
    expect(after.length === 0, `call ${round}/${PROGRESS_ROUNDS}: progress sent after the response: ${short(after)}`);
    const seen = (phase) => before.some((p) => (p.message ?? '').startsWith('Glob ') && (p.message ?? '').includes(phase));
    expect(
      seen(' start') && seen(' complete'),
      `call ${round}/${PROGRESS_ROUNDS}: the Glob call's start and complete progress did not both precede the ` +
        `response (${before.length} before it: ${short(before.map((p) => p.message))})`,
    );
    const values = before.map((p) => p.progress);
    expect(
      values.every((v, i) => i === 0 || v > values[i - 1]),
      `call ${round}/${PROGRESS_ROUNDS}: progress did not increase: ${short(values)}`,
    );
    const known = new Set(before.map((p) => `${p.progress} ${p.message}`));
    const strange = events.filter((p) => !known.has(`${p.progress} ${p.message}`));
    expect(strange.length === 0, `the onprogress callback got notifications not on the wire: ${short(strange)}`);
    total += before.length;
    delivered += events.length;
  }
  return (
    `progress: ${total} notifications/progress over ${PROGRESS_ROUNDS} calls with an inner Glob call, all before ` +
    `their response (${delivered} reached onprogress)`
  );
}

async function checkSampling(cfg, c) {
  c.reset();
  const s = okResult(cfg, await c.repl("await haiku('Reply with the word pong.')"), 'haiku');
  expect(s.result === SAMPLE_REPLY, `haiku returned ${short(s.result)}`);
  expect(c.samples.some((t) => t.includes('Reply with the word pong.')), `the handler did not see the prompt: ${short(c.samples)}`);
  return "sampling: haiku() returned the sampling handler's text";
}

async function checkElicitation(cfg, c) {
  const path = join(cfg.root, 'a.txt');
  c.reset(true);
  const s = okResult(cfg, await c.repl("await put('a.txt', 'x')"), 'put (accepted)');
  expect(c.elicitations.some(([t]) => t === 'Write'), `no Write elicitation: ${short(c.elicitations)}`);
  expect(existsSync(path), `put was approved but ${path} does not exist (result ${short(s.result)})`);
  expect(readFileSync(path, 'utf8') === 'x', 'a.txt does not hold x');
  c.reset(false);
  const r = await c.repl("await Edit({file_path: 'a.txt', old_string: 'x', new_string: 'y'})");
  expect(c.elicitations.some(([t]) => t === 'Edit'), `no Edit elicitation: ${short(c.elicitations)}`);
  expect(r.isError === true, `the declined Edit did not give isError: ${short(r)}`);
  expect(readFileSync(path, 'utf8') === 'x', 'the declined Edit changed a.txt');
  c.reset(true);
  return 'elicitation: an accepted put wrote a.txt; a declined Edit was refused (isError), a.txt unchanged';
}

async function checkRegistered(cfg, c) {
  const name = 'eval_registered__dbl';
  const code =
    "registerTool('dbl', 'Doubles n', {type: 'object', properties: {n: {type: 'number'}}, required: ['n']}," +
    ' async ({n}) => n * 2)';
  const s = okResult(cfg, await c.repl(code), 'registerTool');
  expect((s.new_tools ?? []).includes(name), `registerTool did not report ${name}: ${short(s.new_tools)}`);
  const { tools } = await c.listTools(true);
  expect(tools.some((t) => t.name === name), `${name} is not in tools/list: ${short(tools.map((t) => t.name))}`);
  const args = { n: 21 };
  if (cfg.modern) args.context = s.context;
  c.reset(true);
  const r = await c.call(name, args);
  expect(!r.isError, `${name} gave isError: ${short(r)}`);
  expect(c.elicitations.some(([t]) => t === name), `${name} did not ask approval: ${short(c.elicitations)}`);
  expect(r.structuredContent?.result === 42, `${name}({n: 21}) gave ${short(r)}`);
  return `registered tool: ${name}({n: 21}) == 42 after approval`;
}

async function checkCancellation(cfg, c) {
  const s = okResult(cfg, await c.repl('let q = 1'), 'let q = 1');
  const handle = cfg.modern ? s.context : undefined;
  const code =
    'await new Promise(r => setTimeout(r, 2500)); globalThis.late = 1;' +
    " await new Promise(r => setTimeout(r, 60000)); 'finished'";
  const started = Date.now();
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error('cancelled by the test')), 1500);
  let outcome;
  try {
    outcome = { result: await c.repl(code, handle, { options: { signal: abort.signal } }) };
  } catch (err) {
    outcome = { error: err };
  } finally {
    clearTimeout(timer);
  }
  expect(outcome.error, `the 60 s call was not cancelled; it returned ${short(outcome.result)}`);
  expect(Date.now() - started < 10_000, `the aborted call returned only after ${(Date.now() - started) / 1000} s`);
  const s2 = okResult(cfg, await withTimeout(c.repl('q + 1', handle), 20_000, 'q + 1 after the cancel'), 'q + 1');
  expect(s2.result === 2, `the context after the cancel gave q + 1 == ${short(s2.result)}`);
  const elapsed = Date.now() - started;
  expect(elapsed < 10_000, `the call after the cancel took until ${elapsed / 1000} s: the evaluation kept the context busy`);
  await sleep(Math.max(0, started + 4000 - Date.now()));
  const s3 = okResult(cfg, await c.repl('typeof globalThis.late', handle), 'typeof late');
  expect(s3.result === 'undefined', `the cancelled evaluation kept running: globalThis.late is ${short(s3.result)} 4 s later`);
  return 'cancellation: the aborted evaluation stopped and the context answered the next call';
}

async function checkErrors(cfg, c) {
  let threw;
  try {
    const r = await c.call('no_such_tool', {});
    throw new CheckFailed(`calling an unknown tool did not fail; it returned ${short(r)}`);
  } catch (err) {
    if (err instanceof CheckFailed) throw err;
    threw = err;
  }
  expect(typeof threw.code === 'number', `the unknown tool's error has no JSON-RPC code: ${threw}`);
  for (const bad of [{ code: 5 }, { timeout: 1 }]) {
    const r = await c.call('repl', bad);
    expect(r.isError === true, `repl with ${short(bad)} did not give isError: ${short(r)}`);
  }
  return `errors: an unknown tool is a protocol error (${threw.code}: ${threw.message}); bad repl arguments give isError`;
}

async function checkTerminate(cfg, c) {
  const t = c.transportObj;
  expect(typeof t.sessionId === 'string' && t.sessionId !== '', `no Mcp-Session-Id: ${short(t.sessionId)}`);
  await t.terminateSession();
  expect(t.sessionId === undefined, `the session id is still set after terminateSession: ${t.sessionId}`);
  return 'session end: terminateSession (DELETE of the session) succeeded';
}

async function runFull(cfg) {
  const conn = cfg.conn();
  try {
    if (cfg.transport === 'http') {
      if (!(await check(cfg.label, 'start wrepl serve --http', () => cfg.startHttp().then(() => undefined)))) return;
    }
    const opened = await check(cfg.label, 'connect', async () => {
      await cfg.open(conn);
      return `connected (${conn.version()})`;
    }, conn);
    if (!opened) {
      console.log(`  server stderr:\n${cfg.logTail()}`);
      return;
    }
    await check(cfg.label, 'initialize', () => checkInitialize(cfg, conn), conn);
    await check(cfg.label, 'tools/list', () => checkToolsList(cfg, conn), conn);
    await check(cfg.label, 'SDK output check', () => checkSdkValidates(cfg, conn), conn);
    await check(cfg.label, 'repl 1+1', () => checkOnePlusOne(cfg, conn), conn);
    await check(cfg.label, 'thrown error', () => checkThrow(cfg, conn), conn);
    await check(cfg.label, 'persistence', () => checkPersistence(cfg, conn), conn);
    await check(cfg.label, 'progress', () => checkProgress(cfg, conn), conn);
    await check(cfg.label, 'sampling', () => checkSampling(cfg, conn), conn);
    await check(cfg.label, 'elicitation', () => checkElicitation(cfg, conn), conn);
    await check(cfg.label, 'registered tool', () => checkRegistered(cfg, conn), conn);
    await check(cfg.label, 'cancellation', () => checkCancellation(cfg, conn), conn);
    await check(cfg.label, 'errors', () => checkErrors(cfg, conn), conn);
    if (cfg.transport === 'http' && !cfg.modern) {
      await check(cfg.label, 'session end', () => checkTerminate(cfg, conn), conn);
    }
  } finally {
    await conn.close();
  }
  if (cfg.transport === 'http' && cfg.modern && cfg.sdk === 'v2') await checkRestart(cfg);
}

/** Client v2, 2026-07-28 over HTTP: an input_required round answered on a restarted server. */
async function checkRestart(cfg) {
  const path = join(cfg.root, 'm.txt');
  const args = { code: "await put('m.txt', 'from-round-two'); 7" };
  let first;
  let handle;
  let key;
  const a = cfg.conn({ autoFulfill: false });
  a.refuseElicitation = true;
  const gotRound = await check(cfg.label, 'restart: input_required from the first server', async () => {
    await cfg.open(a);
    await a.listTools();
    handle = okResult(cfg, await a.repl("let keep = 'persisted'"), 'let keep').context;
    // Client.callTool cannot take this path: with allowInputRequired it still
    // demands structuredContent of the tool (it has an outputSchema) and throws
    // on the input_required result. The SDK's lower-level request() can.
    first = await a.client.request(
      { method: 'tools/call', params: { name: 'repl', arguments: args } },
      { allowInputRequired: true, timeout: STEP_MS },
    );
    expect(first?.resultType === 'input_required', `put without a grant did not return input_required: ${short(first)}`);
    expect(typeof first.requestState === 'string' && first.requestState !== '', `no requestState: ${short(first)}`);
    const requests = Object.entries(first.inputRequests ?? {});
    expect(requests.length === 1, `expected one input request: ${short(first)}`);
    [key] = requests[0];
    expect(requests[0][1]?.method === 'elicitation/create', `the input request is not an elicitation: ${short(requests[0][1])}`);
    expect(!existsSync(path), 'the write happened before it was approved');
    return 'restart: put returned input_required (an elicitation and a requestState), nothing written';
  }, a);
  await a.close();
  if (!gotRound) return;

  const firstServer = cfg.servers.at(-1);
  const b = cfg.conn({ autoFulfill: false });
  b.refuseElicitation = true;
  try {
    const restarted = await check(cfg.label, 'restart: kill the server, start another on the same store', async () => {
      await firstServer.stop('SIGKILL');
      await cfg.startHttp();
      const second = cfg.servers.at(-1);
      expect(second !== firstServer && second.proc.pid !== firstServer.proc.pid, 'no new server process');
      await cfg.open(b);
      await b.listTools();
      return `restart: a new server process at ${cfg.url}`;
    }, b);
    if (!restarted) return;
    await check(cfg.label, 'restart: the answered retry completes on the new server', async () => {
      const final = await b.call('repl', args, {
        params: { inputResponses: { [key]: { action: 'accept', content: { approve: true } } }, requestState: first.requestState },
        options: { allowInputRequired: true },
      });
      expect(final?.resultType !== 'input_required', `the retry asked again: ${short(final)}`);
      const s = okResult(cfg, final, 'the retry');
      expect(s.result === 7, `the retried call gave ${short(s.result)}`);
      expect(existsSync(path) && readFileSync(path, 'utf8') === 'from-round-two', 'm.txt was not written by the retry');
      return 'restart: the retry with inputResponses and the echoed requestState completed on server 2 and wrote m.txt';
    }, b);
    await check(cfg.label, 'restart: a handle from the killed server continues', async () => {
      const s = okResult(cfg, await b.repl('keep', handle), 'keep on the restarted server');
      expect(s.result === 'persisted', `keep == ${short(s.result)} on server 2`);
      return 'restart: a context handle from the killed server continues on the new one';
    }, b);
  } finally {
    await b.close();
  }
}

/** Client v2 with versionNegotiation 'auto' settles on 2026-07-28. */
async function runAuto(binary, workdir, transport) {
  const cfg = new Config({ sdk: 'v2', transport, version: MODERN, mode: 'auto', workdir: join(workdir, 'auto'), binary });
  cfg.label = `client/${transport}/auto`;
  const conn = cfg.conn();
  try {
    await check(cfg.label, "versionNegotiation 'auto'", async () => {
      if (transport === 'http') await cfg.startHttp();
      await cfg.open(conn);
      expect(conn.version() === MODERN && conn.era() === 'modern', `'auto' settled on ${conn.version()} (${conn.era()})`);
      await conn.listTools();
      const s = okResult(cfg, await conn.repl('6 * 7'), '6 * 7');
      expect(s.result === 42, `6 * 7 gave ${short(s.result)}`);
      return `'auto' negotiated ${MODERN}; repl 6 * 7 == 42`;
    }, conn);
  } finally {
    await conn.close();
    await cfg.cleanup();
  }
}

/** Client v2 limited to one older revision: the basics work at it. */
async function runOlder(binary, workdir, transport, version) {
  const cfg = new Config({ sdk: 'v2', transport, version, versions: [version], workdir, binary });
  const conn = cfg.conn();
  try {
    await check(cfg.label, `revision ${version}`, async () => {
      if (transport === 'http') await cfg.startHttp();
      await cfg.open(conn);
      expect(conn.version() === version, `negotiated ${short(conn.version())}, offered only ${version}`);
      const { tools } = await conn.listTools();
      expect(tools.some((t) => t.name === 'repl'), `no repl tool: ${short(tools)}`);
      const r = await conn.repl('1+1');
      expect(!r.isError && r.structuredContent?.result === 2, `1+1: ${short(r)}`);
      const e = await conn.repl('throw new Error("boom")');
      expect(e.isError === true, `a throw: ${short(e)}`);
      return `revision ${version}: initialize, tools/list, 1+1 and a throw`;
    }, conn);
  } finally {
    await conn.close();
    await cfg.cleanup();
  }
}

/**
 * `serve --async`. At 2025-11-25 both result shapes (queued, polled) pass
 * the SDK's outputSchema check. Async mode is for connections: a 2026-07-28
 * client has none, and gets the plain `repl` tool, answered at once.
 */
async function runAsync(binary, workdir, sdk, version) {
  const cfg = new Config({
    sdk,
    transport: 'stdio',
    version,
    mode: sdk === 'v2' ? (version === MODERN ? { pin: MODERN } : 'legacy') : undefined,
    workdir: join(workdir, 'async'),
    binary,
  });
  cfg.label = `${cfg.label} --async`;
  const conn = cfg.conn();
  try {
    await check(cfg.label, 'async results match the outputSchema', async () => {
      await cfg.open(conn, ['--async']);
      expect(conn.version() === version, `negotiated ${short(conn.version())}`);
      const { tools } = await conn.listTools();
      const repl = tools.find((t) => t.name === 'repl');
      if (cfg.modern) {
        expect(repl && !repl.outputSchema?.anyOf, `a ${MODERN} repl tool with the queued shape: ${short(repl?.outputSchema)}`);
        expect(!tools.some((t) => t.name === 'repl_result'), `repl_result listed at ${MODERN}: ${short(tools.map((t) => t.name))}`);
        const s = okResult(cfg, await conn.repl('1 + 2'), '1 + 2');
        expect(s.result === 3, `1 + 2 gave ${short(s.result)}`);
        return `async: a ${MODERN} client gets the plain repl tool and its result at once, matching the outputSchema`;
      }
      expect(repl && Array.isArray(repl.outputSchema?.anyOf), `the async repl tool's outputSchema: ${short(repl?.outputSchema)}`);
      expect(tools.some((t) => t.name === 'repl_result'), `no repl_result tool: ${short(tools.map((t) => t.name))}`);
      const queued = await conn.repl('1 + 2');
      const q = sc(queued);
      expect(!queued.isError && typeof q.eval_id === 'string', `queued: ${short(queued)}`);
      const done = await conn.call('repl_result', { eval_id: q.eval_id, wait_ms: 30_000 });
      expect(sc(done).result === 3, `the polled result: ${short(done)}`);
      return 'async: the queued and the polled results pass the SDK check against the declared outputSchema';
    }, conn);
  } finally {
    await conn.close();
  }
}

// --------------------------------------------------------------------------- main

async function main(binary) {
  const workdir = mkdtempSync(join(tmpdir(), 'wrepl-ts-sdk-'));
  const started = Date.now();
  console.log(
    `@modelcontextprotocol/sdk LATEST_PROTOCOL_VERSION ${V1_LATEST}; @modelcontextprotocol/client ` +
      `LATEST_PROTOCOL_VERSION ${V2_LATEST} (initialize) and ${MODERN} (server/discover)`,
  );
  const configs = [
    { sdk: 'v1', transport: 'stdio', version: LEGACY },
    { sdk: 'v1', transport: 'http', version: LEGACY },
    { sdk: 'v2', transport: 'stdio', version: LEGACY, mode: 'legacy' },
    { sdk: 'v2', transport: 'stdio', version: MODERN, mode: { pin: MODERN } },
    { sdk: 'v2', transport: 'http', version: LEGACY, mode: 'legacy' },
    { sdk: 'v2', transport: 'http', version: MODERN, mode: { pin: MODERN } },
  ].map((o) => new Config({ ...o, workdir, binary }));
  try {
    for (const cfg of configs) {
      try {
        await runFull(cfg);
      } finally {
        await cfg.cleanup();
      }
    }
    for (const transport of ['stdio', 'http']) await runAuto(binary, workdir, transport);
    for (const version of OLDER) {
      for (const transport of ['stdio', 'http']) await runOlder(binary, workdir, transport, version);
    }
    await runAsync(binary, workdir, 'v1', LEGACY);
    await runAsync(binary, workdir, 'v2', LEGACY);
    await runAsync(binary, workdir, 'v2', MODERN);
  } catch (err) {
    failures.push(`unexpected: ${err?.stack ?? err}`);
  }
  return report(workdir, started);
}

// Exits at once: the servers are stopped, and the exit hook kills any left.
await runWithBinary('ts-sdk-checks.mjs', main);
