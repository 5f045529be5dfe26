//! Differential testing of the guest boundary: the same generated program
//! runs in wrepl's own host (wasmtime) and in the JavaScript host (jco on
//! Node.js, `hosts/node/serve-lines.mjs`, one process for the whole run), each
//! in a fresh sandbox with the host-conformance tools; both must give the
//! same value, error name, console output and stop.
//!
//! Programs come from a grammar of deterministic statements (no clock, no
//! randomness): arithmetic and strings, objects and arrays, tool calls alone
//! and in parallel, caught and uncaught tool failures, timers, console
//! output, throws, and a loop the budget stops. Without an installed Node
//! host (`npm ci` in hosts/node) the target only runs wrepl's host, checking
//! that it never crashes, and says so once.
#![no_main]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use wrepl::{EvalOptions, Repl};
use wrepl_fuzz::{engine, runtime};

#[derive(Debug, Arbitrary)]
enum Stmt {
    Arith(i8, i8, u8),
    Str(u8, u8),
    Object(u8, bool),
    Array(u8),
    Echo(u8),
    Add(i8, i8),
    Parallel(u8, i8, u8),
    FailCaught(u8),
    Sleep(u8, u8),
    Timer(u8, u8),
    Log(u8),
    Warn(u8),
    ThrowCaught(u8),
    TypeofChecks,
    Json(u8),
}

/// A statement that ends the program early, or nothing.
#[derive(Debug, Arbitrary)]
enum End {
    Nothing,
    Throw(u8),
    FailUncaught(u8),
    Spin,
    NeverSettles,
}

#[derive(Debug, Arbitrary)]
struct Program {
    stmts: Vec<Stmt>,
    end: End,
}

fn render(s: &Stmt) -> String {
    match s {
        Stmt::Arith(a, b, op) => {
            let op = ["+", "-", "*", "%", "**", "/", "|", "<<"][*op as usize % 8];
            format!("L.push(({a}) {op} ({b}));")
        }
        Stmt::Str(n, k) => format!("L.push('ab'.repeat({}) + String.fromCharCode({}));", n % 5, 65 + k % 58),
        Stmt::Object(k, nested) => {
            if *nested {
                format!("L.push({{k{k}: {{deep: [{k}, null, true]}}, s: 'v{k}'}});")
            } else {
                format!("L.push({{a: {k}, b: [{k}, '{k}']}});")
            }
        }
        Stmt::Array(n) => format!("L.push(Array.from({{length: {}}}, (_, i) => i * i).filter(x => x % 2));", n % 9),
        Stmt::Echo(k) => format!("L.push(await echo({{k: {k}, s: 'x{k}', l: [{k}]}}));"),
        Stmt::Add(a, b) => format!("L.push(await add({{a: {a}, b: {b}}}));"),
        Stmt::Parallel(a, b, ms) => format!(
            "L.push(await Promise.all([sleep({{ms: {}, value: 'p{a}'}}), add({{a: {b}, b: 1}}), echo({{v: {a}}})]));",
            ms % 4
        ),
        Stmt::FailCaught(k) => {
            format!("try {{ await fail({{message: 'f{k}'}}); L.push('no') }} catch (e) {{ L.push([e.name, e.kind]) }}")
        }
        Stmt::Sleep(ms, v) => format!("L.push(await sleep({{ms: {}, value: {v}}}));", ms % 4),
        Stmt::Timer(d, v) => format!("L.push(await new Promise((r) => setTimeout(() => r({v}), {})));", d % 4),
        Stmt::Log(k) => format!("console.log('log', {k}, [{k}], {{k: {k}}});"),
        Stmt::Warn(k) => format!("console.warn('warn {k}');"),
        Stmt::ThrowCaught(k) => format!("try {{ throw new TypeError('t{k}') }} catch (e) {{ L.push(e.name + e.message) }}"),
        Stmt::TypeofChecks => "L.push([typeof require, typeof process, typeof WebAssembly, typeof echo]);".into(),
        Stmt::Json(k) => format!("L.push(JSON.parse(JSON.stringify({{n: {k}, u: undefined, a: [1, {{}}]}})));"),
    }
}

fn program(p: &Program) -> String {
    let mut code = String::from("var L = [];\n");
    for s in p.stmts.iter().take(24) {
        code.push_str(&render(s));
        code.push('\n');
    }
    code.push_str(&match &p.end {
        End::Nothing => String::new(),
        End::Throw(k) => format!("throw new RangeError('end {k}');\n"),
        End::FailUncaught(k) => format!("await fail({{message: 'uncaught {k}'}});\n"),
        End::Spin => "while (true) {}\n".into(),
        End::NeverSettles => "await new Promise(() => {});\n".into(),
    });
    code.push('L');
    code
}

/// The Node host's line server, when it is installed.
struct Node {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

fn node() -> Option<&'static Mutex<Node>> {
    static NODE: OnceLock<Option<Mutex<Node>>> = OnceLock::new();
    NODE.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../hosts/node");
        let bin = dir.join("node_modules/.bin/node");
        if !bin.exists() || !dir.join("gen/guest.js").exists() {
            eprintln!(
                "host_diff: the Node host is not installed (npm ci and node build.mjs in hosts/node): \
                 running wrepl's host alone"
            );
            return None;
        }
        let mut child = Command::new(bin)
            .arg(dir.join("serve-lines.mjs"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the Node host");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Some(Mutex::new(Node { _child: child, stdin, stdout }))
    })
    .as_ref()
}

/// The budget of a program: short, since one of them spins.
const BUDGET_MS: u64 = 500;

/// What a host gave back, in the form both can be compared in.
fn wrepl_outcome(code: &str) -> Value {
    runtime().block_on(async {
        let mut repl = Repl::builder()
            .engine(engine())
            .roots([std::env::temp_dir()])
            .without_builtin_tools()
            .tools(wrepl::testing::conformance_tools())
            .build()
            .await
            .expect("a sandbox");
        let opts = EvalOptions { timeout: Some(Duration::from_millis(BUDGET_MS)), ..EvalOptions::default() };
        let r = repl.eval(code, opts).await.expect("eval");
        json!({
            "value": if r.timed_out || r.error.is_some() { Value::Null } else { r.result.unwrap_or(Value::Null) },
            "error": if r.timed_out { Value::Null } else { json!(r.error.map(|e| e.name)) },
            "stdout": r.stdout,
            "stderr": r.stderr,
            "interrupted": r.timed_out,
        })
    })
}

fn node_outcome(node: &Mutex<Node>, code: &str) -> Value {
    let mut n = node.lock().unwrap_or_else(|p| p.into_inner());
    let request = json!({"code": code, "timeoutMs": BUDGET_MS});
    writeln!(n.stdin, "{request}").expect("write to the Node host");
    n.stdin.flush().expect("flush");
    let mut line = String::new();
    n.stdout.read_line(&mut line).expect("read from the Node host");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("the Node host answered {line:?}: {e}"));
    assert!(v.get("hostError").is_none(), "the Node host failed: {v}");
    let interrupted = v["interrupted"] == true;
    json!({
        "value": if interrupted || !v["error"].is_null() { Value::Null } else { v["value"].clone() },
        "error": if interrupted { Value::Null } else { v["error"]["name"].clone() },
        "stdout": v["stdout"],
        "stderr": v["stderr"],
        "interrupted": interrupted,
    })
}

fuzz_target!(|p: Program| {
    let code = program(&p);
    let ours = wrepl_outcome(&code);
    if let Some(node) = node() {
        let theirs = node_outcome(node, &code);
        assert_eq!(ours, theirs, "the hosts disagree on:\n{code}");
    }
});
