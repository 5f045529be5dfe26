// Transpile the committed guest component with jco (default output: gen/).
// The guest's blocking `next-completion` import suspends it through JSPI,
// and its `eval` export returns a promise.
//
//   node build.mjs [--component FILE.wasm] [--out DIR]
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: { component: { type: "string" }, out: { type: "string" } },
});
const component = values.component ?? join(here, "../../guest-js/dist/wrepl-guest.wasm");
const out = values.out ?? join(here, "gen");
const jco = join(here, "node_modules/@bytecodealliance/jco/dist/jco.js");
execFileSync(
  process.execPath,
  [
    jco, "transpile", component, "-o", out, "--name", "guest", "--quiet",
    "--instantiation", "async",
    "--async-mode", "jspi",
    "--async-imports", "wrepl:sandbox/calls#next-completion",
    "--async-exports", "wrepl:sandbox/repl#eval",
  ],
  { stdio: "inherit" },
);
console.log(`transpiled ${component} into ${out}`);
