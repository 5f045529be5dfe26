// What the client check scripts (ts-sdk-checks.mjs, inspector-checks.mjs)
// share: counted checks, the processes they start (killed when the script
// exits), `wrepl serve --http` on a free port, and the report at the end.
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';

/** Every failed check, one line each. */
export const failures = [];
/** How many checks passed. */
export let passes = 0;

/** A check's own failure (its message is the whole story, no stack). */
export class CheckFailed extends Error {}

export function expect(cond, what) {
  if (!cond) throw new CheckFailed(what);
}

/** `value` as text (strings as they are, the rest as JSON), cut at `max` characters. */
export function short(value, max = 1500) {
  let text;
  try {
    text = typeof value === 'string' ? value : JSON.stringify(value);
  } catch {
    text = String(value);
  }
  return text === undefined ? String(value) : text.length < max ? text : `${text.slice(0, max)}...`;
}

/** `promise`, or a CheckFailed naming `what` once `ms` pass. */
export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new CheckFailed(`${what}: no answer within ${ms / 1000} s`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Run one check: PASS or FAIL, counted. With `timeoutMs`, a check that takes
 * longer fails; on a failure, `onFail` runs (e.g. to print a connection's
 * last messages). True when it passed.
 */
export async function check(label, what, fn, { timeoutMs, onFail } = {}) {
  try {
    const running = Promise.resolve().then(fn);
    const note = await (timeoutMs ? withTimeout(running, timeoutMs, what) : running);
    passes += 1;
    console.log(`PASS ${label}: ${note ?? what}`);
    return true;
  } catch (err) {
    const message = err instanceof CheckFailed ? err.message : `${err?.name ?? 'Error'}: ${err?.message ?? err}`;
    const first = message.split('\n')[0];
    failures.push(`${label}: ${what}: ${first.length < 400 ? first : `${first.slice(0, 400)}...`}`);
    console.log(`FAIL ${label}: ${what}: ${message}`);
    if (!(err instanceof CheckFailed) && err?.stack) console.log(err.stack.split('\n').slice(1, 6).join('\n'));
    if (onFail) onFail();
    return false;
  }
}

// --------------------------------------------------------------------------- processes

/** Processes this script started; whatever still runs is killed when it exits. */
export const children = new Set();
process.on('exit', () => {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
});

/** `env` without WREPL_TOKEN (each server gets its own token). */
export function withoutToken(env) {
  const out = { ...env };
  delete out.WREPL_TOKEN;
  return out;
}

/**
 * `wrepl serve --http 127.0.0.1:0 ARGS`, started by this script: its
 * address from its stderr (which goes to `log`), its stdout kept.
 */
export class HttpServer {
  constructor(binary, args, log) {
    this.lines = [];
    this.stdout = '';
    this.url = null;
    this.proc = spawn(binary, ['serve', '--http', '127.0.0.1:0', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: withoutToken(process.env),
    });
    children.add(this.proc);
    this.proc.stdout.setEncoding('utf8').on('data', (d) => (this.stdout += d));
    this.ready = new Promise((resolveReady) => {
      let buffered = '';
      this.proc.stderr.setEncoding('utf8').on('data', (chunk) => {
        appendFileSync(log, chunk);
        buffered += chunk;
        let nl;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          this.lines.push(line);
          const m = /^wrepl: serving MCP at (http:\/\/\S+)/.exec(line);
          if (m && this.url === null) {
            this.url = m[1];
            resolveReady(this.url);
          }
        }
      });
      this.proc.on('exit', () => resolveReady(null));
    });
  }

  /** The server's URL once it listens (a CheckFailed if it exits first or takes 30 s). */
  async waitReady() {
    const url = await withTimeout(this.ready, 30_000, 'wrepl serve --http to listen');
    if (!url) {
      throw new CheckFailed(
        `wrepl serve --http exited (${this.proc.exitCode ?? this.proc.signalCode}) without listening; stderr: ` +
          (this.lines.slice(-20).join('\n') || '(empty)'),
      );
    }
    return url;
  }

  /** The first complete JSON object printed on stdout (a client configuration). */
  async printedConfig() {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const end = this.stdout.indexOf('\n}\n');
      if (end >= 0) return JSON.parse(this.stdout.slice(0, end + 2));
      expect(Date.now() < deadline, `no configuration on stdout within 30 s: ${short(this.stdout)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Stop the server with `signal` (SIGKILL after 10 s). */
  async stop(signal = 'SIGTERM') {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise((r) => this.proc.once('exit', r));
    this.proc.kill(signal);
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

// --------------------------------------------------------------------------- the end

/** Print the failures (keeping `workdir`) or "all checks passed" (removing it); the exit code. */
export function report(workdir, started) {
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  if (failures.length > 0) {
    console.log(`\n${failures.length} check(s) failed (${passes} passed, ${secs} s):`);
    for (const f of failures) console.log(`  - ${f}`);
    console.log(`(work dir kept: ${workdir})`);
    return 1;
  }
  rmSync(workdir, { recursive: true, force: true });
  console.log(`all checks passed (${passes} checks, ${secs} s)`);
  return 0;
}

/**
 * Run `main(binary)` with the wrepl binary named on the command line and exit
 * with its code (at once: the exit hook kills whatever it started).
 */
export async function runWithBinary(script, main) {
  if (process.argv.length !== 3) {
    console.error(`usage: node tests/node/${script} PATH/TO/wrepl`);
    process.exit(2);
  }
  const binary = resolve(process.argv[2]);
  if (!existsSync(binary)) {
    console.error(`FAIL: ${binary} does not exist`);
    process.exit(2);
  }
  process.exit(await main(binary));
}
