// The host-conformance tools (as `wrepl::testing::conformance_tools` in the
// Rust host): echo, add, fail, sleep.
export const conformanceTools = {
  echo: async (input) => input,
  add: async ({ a, b }) => a + b,
  fail: async ({ message }) => {
    throw Object.assign(new Error(message), { kind: "failed" });
  },
  sleep: ({ ms, value }) => new Promise((resolve) => setTimeout(() => resolve(value), Math.min(ms, 60000))),
};
