// The Node host as a line server, for differential testing against wrepl's
// own host (fuzz/fuzz_targets/host_diff.rs): each line on stdin is a JSON
// request {"code": "...", "timeoutMs": N}, evaluated in a fresh sandbox with
// the conformance tools; each answer is one JSON line {value, error, stdout,
// stderr, interrupted}.
import { createInterface } from "node:readline";
import { createSandbox } from "./wrepl-host.mjs";
import { conformanceTools } from "./conformance-tools.mjs";

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  let answer;
  try {
    const { code, timeoutMs } = JSON.parse(line);
    const sandbox = await createSandbox({ tools: conformanceTools, timeoutMs: timeoutMs ?? 5000 });
    const r = await sandbox.eval(code);
    answer = {
      value: r.value ?? null,
      error: r.error ? { name: r.error.name, message: r.error.message } : null,
      stdout: r.stdout,
      stderr: r.stderr,
      interrupted: r.interrupted,
    };
  } catch (e) {
    answer = { hostError: String(e?.stack ?? e) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
