//! Guest→host value conversion through a real sandbox: the host's WIT import
//! implementations (`start-call`, `register-tool`, `unregister-tool`,
//! `console-write`, `set-timer`/`clear-timer`, `now-us`, `random-u64`) are
//! only reachable from a running guest, so one `Repl` per process is driven
//! with generated scripts that hand fuzzed strings, JSON and numbers across
//! each import. Invariants:
//! - never panics; every evaluation returns, without a timeout and without
//!   losing the context (no trap, no reset);
//! - values survive the trip: a tool that echoes its input gives back the
//!   same JSON (every call passes the pipeline, whose inputs are JSON
//!   objects, so each value travels as `echo({v})` and `.v` is compared;
//!   object key order aside, as the host's JSON objects are sorted maps),
//!   a failing tool's message arrives verbatim, console text arrives
//!   verbatim on the right stream, clock and random values are sane;
//! - a value holding a lone UTF-16 surrogate (not valid JSON for the host)
//!   is refused with `invalid-input`, never echoed altered;
//! - `registerTool` accepts exactly the names the host allows, and the
//!   host's registry only ever holds valid entries (≤ 100 tools);
//! - the context stays usable: `1+1` is 2 afterwards.
#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use wrepl::{EvalOptions, Repl, engine::MAX_REGISTERED_TOOLS};
use wrepl_fuzz::{arb_json, arb_string, js_str, runtime, FuzzTools, JsonShape};

const WORDS: &[&str] = &[
    "type",
    "object",
    "properties",
    "required",
    "items",
    "string",
    "number",
    "$ref",
    "#",
    "#/definitions/x",
    "definitions",
    "pattern",
    "(a+)+$",
    "format",
    "enum",
    "const",
    "additionalProperties",
    "__proto__",
    "constructor",
    "toString",
    "\u{0}",
    "\u{2028}",
    "\u{feff}",
    "\\ud800",
    "💥",
];

/// One action across the boundary.
#[derive(Debug)]
enum Op {
    /// `echo({v: JSON.parse(text)})`, or the text itself when it is not JSON.
    Echo(String),
    /// `echo({v: value})` with a generated JSON value.
    EchoValue(serde_json::Value),
    /// `fail({m: text})`: the text comes back as the error message.
    Fail(String),
    /// `registerTool(name, description, JSON.parse(schema) or {...}, handler, {displayName})`.
    Register {
        name: String,
        description: String,
        schema: String,
        display: String,
    },
    Unregister(String),
    Log {
        stderr: bool,
        text: String,
    },
    /// `setTimeout` with an arbitrary delay (cleared unless it is short).
    Timer {
        delay: f64,
        keep: bool,
    },
    Clock,
    /// A large value (up to 1 MiB) through a call and the console.
    Big {
        text: String,
        times: u32,
    },
}

impl<'a> Arbitrary<'a> for Op {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let shape = JsonShape { max_depth: 5, max_nodes: 32, max_string: 128, words: WORDS };
        Ok(match u.int_in_range(0..=8)? {
            0 => Op::Echo(u.arbitrary()?),
            1 => Op::EchoValue(arb_json(u, &shape)?),
            2 => Op::Fail(u.arbitrary()?),
            3 => {
                let name = match u.int_in_range(0..=2)? {
                    0 => u.arbitrary()?,
                    1 => format!("t_{}", u.int_in_range(0..=150u32)?),
                    _ => "x".repeat(u.int_in_range(100..=115)?),
                };
                let schema = if u.arbitrary()? { arb_json(u, &shape)?.to_string() } else { u.arbitrary()? };
                Op::Register { name, description: u.arbitrary()?, schema, display: arb_string(u, &[], 256)? }
            }
            4 => Op::Unregister(u.arbitrary()?),
            5 => Op::Log { stderr: u.arbitrary()?, text: u.arbitrary()? },
            6 => Op::Timer { delay: u.arbitrary()?, keep: u.arbitrary()? },
            7 => Op::Big { text: u.arbitrary()?, times: u.arbitrary()? },
            _ => Op::Clock,
        })
    }
}

#[derive(Debug, Arbitrary)]
struct Script {
    ops: Vec<Op>,
}

/// The host's rule for registered tool names: `^[a-zA-Z0-9_-]{1,111}$`.
fn valid_name(n: &str) -> bool {
    (1..=111).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The start of every generated script:
/// - `bad` collects problems, `registered` the names `registerTool` took;
/// - `same` compares JSON values with object keys sorted (the host's JSON
///   objects are sorted maps, so key order does not survive a call);
/// - `lone` tells whether a value holds a lone UTF-16 surrogate anywhere (in
///   a string or a key): the guest's JSON text then has a `\udXXX` escape the
///   host's JSON parser refuses;
/// - `echoCheck(v, what, i)` sends `{v}` through `echo` and checks that `.v`
///   comes back the same, or that a value with a lone surrogate is refused
///   with `invalid-input`.
const PRELUDE: &str = r#"const bad = [], registered = [];
const canon = (x) => JSON.stringify(x, (_, v) =>
  v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v);
const same = (a, b) => canon(a) === canon(b);
const loneIn = (s) => {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) { i++; continue; }
      return true;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return true;
  }
  return false;
};
const lone = (x) => typeof x === 'string' ? loneIn(x)
  : x !== null && typeof x === 'object' ? Object.keys(x).some((k) => loneIn(k) || lone(x[k])) : false;
const echoCheck = async (v, what, i) => {
  if (lone(v)) {
    try { await echo({v}); bad.push([what + ': a lone surrogate was accepted', i]) }
    catch (e) { if (e.kind !== 'invalid-input') bad.push([what + ': a lone surrogate', i, e.kind, e.message]) }
    return;
  }
  const r = (await echo({v})).v;
  if (!same(r, v)) bad.push([what, i, r, v]);
};
"#;

/// The generated script: each op in its own try/catch; problems are pushed to
/// `bad`, console texts that must arrive are returned as `logs`.
fn script(ops: &[Op]) -> (String, Vec<(bool, String)>) {
    let mut js = String::from(PRELUDE);
    let mut logs = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let body = match op {
            Op::Echo(text) => format!(
                "let v; try {{ v = JSON.parse({t}) }} catch (_) {{ v = {t} }}\n\
                 await echoCheck(v, 'echo', {i});",
                t = js_str(text)
            ),
            Op::EchoValue(v) => format!("const v = {v};\nawait echoCheck(v, 'echo value', {i});"),
            Op::Fail(text) => format!(
                "try {{ await fail({{m: {t}}}); bad.push(['fail resolved', {i}]) }}\n\
                 catch (e) {{ if (e.kind !== 'failed' || e.message !== {t}) bad.push(['fail', {i}, e.kind, e.message]) }}",
                t = js_str(text)
            ),
            Op::Register { name, description, schema, display } => format!(
                "let s; try {{ s = JSON.parse({schema}) }} catch (_) {{ s = {{type: 'object', description: {schema}}} }}\n\
                 try {{ registerTool({name}, {desc}, s, async (x) => x, {{displayName: {display}}}); registered.push({name}) }}\n\
                 catch (e) {{ if (!(e instanceof Error)) bad.push(['register threw a non-error', {i}]) }}",
                schema = js_str(schema),
                name = js_str(name),
                desc = js_str(description),
                display = js_str(display),
            ),
            Op::Unregister(name) => format!("unregisterTool({});", js_str(name)),
            Op::Log { stderr, text } => {
                logs.push((*stderr, text.clone()));
                format!("console.{}({});", if *stderr { "error" } else { "log" }, js_str(text))
            }
            Op::Timer { delay, keep } => {
                let d = if delay.is_nan() { "NaN".to_string() } else { format!("{delay:?}").replace("inf", "Infinity") };
                // Only short timers may stay armed: the evaluation waits for them.
                let keep = *keep && (*delay <= 2.0 || delay.is_nan());
                if keep {
                    format!("await new Promise((res) => setTimeout(res, {d}));")
                } else {
                    format!("const id = setTimeout(() => bad.push(['cleared timer fired', {i}]), {d});\nclearTimeout(id);")
                }
            }
            Op::Big { text, times } => {
                let times = (*times).min((1 << 20) / text.len().max(1) as u32);
                format!(
                    "const s = {t}.repeat({times});\n\
                     const r = await echo({{s}});\n\
                     if (r.s !== s) bad.push(['big echo', {i}, s.length, String(r.s).length]);\n\
                     console.log(s.length, s.slice(0, 16));",
                    t = js_str(text)
                )
            }
            Op::Clock => format!(
                "const t = Date.now(), r = Math.random();\n\
                 if (!Number.isFinite(t) || t <= 0 || !(r >= 0 && r < 1)) bad.push(['clock', {i}, t, r]);"
            ),
        };
        js.push_str(&format!("try {{\n{body}\n}} catch (e) {{ bad.push(['threw', {i}, String(e)]) }}\n"));
    }
    js.push_str("({bad, registered, tools: listTools().map((t) => t.name)})");
    (js, logs)
}

fn repl() -> &'static Mutex<Repl> {
    static REPL: OnceLock<Mutex<Repl>> = OnceLock::new();
    REPL.get_or_init(|| {
        let repl = runtime().block_on(FuzzTools::default().builder().build()).expect("repl");
        Mutex::new(repl)
    })
}

fuzz_target!(|input: Script| {
    let ops: Vec<Op> = input.ops.into_iter().take(24).collect();
    let (js, logs) = script(&ops);
    let mut repl = repl().lock().unwrap_or_else(|p| p.into_inner());
    let opts = EvalOptions { timeout: Some(Duration::from_secs(10)), ..Default::default() };
    let r = runtime().block_on(repl.eval(&js, opts)).expect("eval");
    assert!(!r.timed_out, "the evaluation timed out:\n{js}");
    assert!(r.context_reset.is_none(), "the context was lost: {:?}\n{js}", r.context_reset);
    if let Some(e) = &r.error {
        panic!("the generated script failed: {e:?}\n{js}");
    }
    let value = r.result.clone().expect("a result value");
    assert_eq!(value["bad"], json!([]), "values changed across the boundary:\n{js}");
    for (stderr, text) in &logs {
        let stream = if *stderr { &r.stderr } else { &r.stdout };
        assert!(stream.contains(text.as_str()), "console text lost: {text:?}");
    }
    // The host accepted exactly the names it allows (the JS wrapper checks
    // first, the host again), its registry holds only valid tools, and it
    // agrees with the script's view. Tools stay registered across runs (so
    // the 100-tool limit is reached) and are cleared every 32 runs.
    for name in value["registered"].as_array().expect("array") {
        let name = name.as_str().expect("string");
        assert!(valid_name(name), "registered invalid name {name:?}");
    }
    let registry = repl.registered_tools();
    assert!(registry.len() <= MAX_REGISTERED_TOOLS, "{} tools registered", registry.len());
    for t in &registry {
        assert!(valid_name(&t.name), "the host registry holds {:?}", t.name);
        assert!(t.description.chars().count() <= 10_000 && t.input_schema.is_object(), "{t:?}");
        assert!(t.display_name.as_ref().is_none_or(|d| !d.is_empty() && d.chars().count() <= 200), "{t:?}");
    }
    let host: Vec<&str> = registry.iter().map(|t| t.name.as_str()).collect();
    let mut guest: Vec<&str> =
        value["tools"].as_array().expect("array").iter().map(|n| n.as_str().expect("string")).collect();
    guest.sort_unstable();
    assert_eq!(host, guest, "host and guest registries disagree");
    static RUNS: AtomicU64 = AtomicU64::new(0);
    if RUNS.fetch_add(1, Ordering::Relaxed) % 32 == 31 {
        let clear = "for (const t of listTools()) unregisterTool(t.name); listTools().length";
        let r = runtime().block_on(repl.eval(clear, EvalOptions::default())).expect("eval");
        assert_eq!(r.result, Some(json!(0)));
        assert!(repl.registered_tools().is_empty(), "unregisterTool left tools in the host registry");
    }
    let two = runtime().block_on(repl.eval("1+1", EvalOptions::default())).expect("eval");
    assert_eq!(two.result, Some(json!(2)), "the context is not usable: {two:?}");
});
