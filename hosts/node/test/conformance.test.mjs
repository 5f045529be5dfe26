// The host-conformance programs (tests/host-conformance/programs.json), run
// in this host; `cargo test` runs the same file in wrepl's wasmtime host.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { createSandbox } from "../wrepl-host.mjs";
import { conformanceTools } from "../conformance-tools.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const programs = JSON.parse(readFileSync(join(here, "../../../tests/host-conformance/programs.json"), "utf8"));

const tools = conformanceTools;

for (const c of programs.cases) {
  test(c.name, async () => {
    const sandbox = await createSandbox({ tools });
    for (const [i, step] of c.steps.entries()) {
      const at = `step ${i}: ${step.code}`;
      const r = await sandbox.eval(step.code, step.timeout_ms ? { timeoutMs: step.timeout_ms } : undefined);
      if (step.stopped) {
        assert.equal(r.interrupted, true, at);
        continue;
      }
      assert.equal(r.interrupted, false, at);
      if (step.error) {
        assert.ok(r.error, `${at}: expected an error, got ${JSON.stringify(r.value)}`);
        assert.equal(r.error.name, step.error.name, at);
        assert.ok(r.error.message.includes(step.error.message), `${at}: ${r.error.message}`);
      } else {
        assert.equal(r.error, undefined, `${at}: ${JSON.stringify(r.error)}`);
        assert.deepEqual(r.value, step.value, at);
      }
      if ("text" in step) assert.equal(r.text, step.text, at);
      if ("stdout" in step) assert.equal(r.stdout, step.stdout, at);
      if ("stderr" in step) assert.equal(r.stderr, step.stderr, at);
      if ("calls" in step) assert.deepEqual(r.calls.map((c) => [c.tool, c.input]), step.calls, at);
    }
  });
}

test("the README's example runs and prints what it says", async () => {
  const { execFileSync } = await import("node:child_process");
  const out = execFileSync(process.execPath, [join(here, "../example.mjs")], { encoding: "utf8" });
  assert.equal(out, "42\n43\ntrue\n");
});

test("the host's deadline stops a script through should-interrupt alone", async () => {
  const sandbox = await createSandbox({ tools, timeoutMs: 200 });
  const started = Date.now();
  for (const code of ["while (true) {}", "for (;;) { [].concat([1]) }", "await (async () => { for (;;) await null })()"]) {
    const r = await sandbox.eval(code);
    assert.equal(r.interrupted, true, code);
  }
  assert.ok(Date.now() - started < 30000);
  assert.equal((await sandbox.eval("'alive'")).value, "alive");
});

test("a heap limit given to init bounds the script's memory", async () => {
  const sandbox = await createSandbox({ tools, memoryLimit: 16 * 1024 * 1024 });
  const r = await sandbox.eval("var a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length)");
  assert.ok(r.error, JSON.stringify(r));
  assert.match(r.error.message, /out of memory/);
});
