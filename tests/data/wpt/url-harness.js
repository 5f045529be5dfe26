// Runs WPT's urltestdata.json and setters_tests.json (bound as DATA and
// SETTERS before this text) against the sandbox's URL. The result lists the
// names of the failed cases and the counts.
const failed = [];
let passed = 0, total = 0;
const PARTS = ["href", "protocol", "username", "password", "host", "hostname", "port", "pathname", "search", "hash"];
for (const t of DATA) {
  if (typeof t === "string") continue;
  total++;
  const name = JSON.stringify(t.input) + (t.base === null ? "" : " against " + JSON.stringify(t.base));
  let ok;
  try {
    const u = t.base === null ? new URL(t.input) : new URL(t.input, t.base);
    ok = !t.failure && PARTS.every((p) => u[p] === t[p]) && (t.origin === undefined || u.origin === t.origin) &&
      (t.searchParams === undefined || String(u.searchParams) === t.searchParams);
  } catch (e) {
    ok = !!t.failure && e instanceof TypeError;
  }
  // URL.canParse agrees with the constructor.
  const can = t.base === null ? URL.canParse(t.input) : URL.canParse(t.input, t.base);
  if (can === !!t.failure) ok = false;
  if (ok) passed++; else failed.push("parse " + name);
}
for (const part of Object.keys(SETTERS)) {
  if (part === "comment") continue;
  for (const t of SETTERS[part]) {
    total++;
    const name = "set " + part + " of " + JSON.stringify(t.href) + " to " + JSON.stringify(t.new_value);
    let ok;
    try {
      const u = new URL(t.href);
      u[part] = t.new_value;
      ok = Object.keys(t.expected).every((p) => u[p] === t.expected[p]);
    } catch (e) {
      ok = false;
    }
    if (ok) passed++; else failed.push(name);
  }
}
({ passed, total, failed })
