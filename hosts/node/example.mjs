import { createSandbox } from "./wrepl-host.mjs";

const sandbox = await createSandbox({
  tools: { add: async ({ a, b }) => a + b },
  timeoutMs: 1000,
});
console.log((await sandbox.eval("var x = await add({a: 40, b: 2}); x")).value);
console.log((await sandbox.eval("x + 1")).value);
console.log((await sandbox.eval("while (true) {}")).interrupted);
