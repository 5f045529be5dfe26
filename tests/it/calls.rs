//! Inner calls across the WIT boundary: round trips, concurrency, failures, limits.

use std::time::Instant;

use serde_json::json;

use crate::support::*;

#[tokio::test(flavor = "multi_thread")]
async fn host_call_round_trip_copies_json() {
    let tools = test_tools();
    let mut r = TestSandbox::new().tools(tools.clone(), TEST_TOOLS).build().await;
    let res = ev(&mut r, "let s = 0; for (let i = 0; i < 1000; i++) s += (await t({i})).i; s").await;
    assert_eq!(ok(&res), json!(499500));
    assert_eq!(tools.log.lock().unwrap().len(), 1000);
    let res = ev(&mut r, "const v = await t({a: [1, 'two', null], b: {c: true}}); v").await;
    assert_eq!(ok(&res), json!({"a": [1, "two", null], "b": {"c": true}}));
    // the guest gets a copy, not a shared object
    let res = ev(&mut r, "const input = {n: 1}; const out = await t(input); out.n = 2; input.n").await;
    assert_eq!(ok(&res), json!(1));
}

/// The records of one evaluation's calls are bounded in the host's memory:
/// past the ceiling, calls still run and return, and the result counts the
/// ones its transcript lacks.
#[tokio::test(flavor = "multi_thread")]
async fn records_past_the_ceiling_are_counted_in_a_warning() {
    let tools = test_tools();
    let mut r = TestSandbox::new().tools(tools.clone(), TEST_TOOLS).build().await;
    let res = ev(&mut r, "let s = 0; for (let i = 0; i < 120000; i++) s += (await t({i})).i; s").await;
    assert_eq!(ok(&res), json!(7199940000u64));
    assert_eq!(tools.log.lock().unwrap().len(), 120_000);
    let kept = res.calls.len();
    assert!(kept > 50_000 && kept < 120_000, "{kept} records");
    // The first calls keep their records, in order.
    assert_eq!(res.calls[0].input.value(), json!({"i": 0}));
    assert_eq!(res.calls[kept - 1].input.value(), json!({"i": kept - 1}));
    let note = format!("{} inner calls are not in this result's transcript", 120_000 - kept);
    assert!(res.stderr.contains(&note), "{}", res.stderr);
    // The next evaluation starts with an empty budget.
    let res = ev(&mut r, "(await t({i: 7})).i").await;
    assert_eq!(res.calls.len(), 1);
    assert!(!res.stderr.contains("transcript"), "{}", res.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_calls_run_concurrently() {
    let mut r = TestSandbox::new().tools(test_tools(), TEST_TOOLS).build().await;
    let t = Instant::now();
    let res = ev(&mut r, "(await Promise.all(Array.from({length: 100}, (_, i) => sleep({ms: 10, i})))).length").await;
    assert_eq!(ok(&res), json!(100));
    assert!(t.elapsed().as_millis() < 1000, "{:?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_and_unknown_calls_reject_in_the_script() {
    let mut r = TestSandbox::new().tools(test_tools(), TEST_TOOLS).build().await;
    let res = ev(&mut r, "try { await fail({}) } catch (e) { [e.name, e.kind, e.message, e.tool] }").await;
    assert_eq!(ok(&res), json!(["ToolError", "failed", "this tool always fails", "fail"]));
    // the script may continue after a failure; earlier results stay
    let res = ev(&mut r, "const a = await t({x: 1}); try { await fail({}) } catch {} ; a.x").await;
    assert_eq!(ok(&res), json!(1));
    // an input that is not JSON-serializable is refused in the guest
    let (name, _) = err(&ev(&mut r, "await t({b: 1n})").await);
    assert_eq!(name, "TypeError");
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_pending_at_script_end_are_aborted_with_a_warning() {
    let tools = test_tools();
    let mut r = TestSandbox::new().tools(tools.clone(), TEST_TOOLS).build().await;
    let res = ev(&mut r, "hang({}); sleep({ms: 50}); 'returned early'").await;
    assert_eq!(ok(&res), json!("returned early"));
    let mut abandoned = res.abandoned_calls.clone();
    abandoned.sort();
    assert_eq!(abandoned, vec!["hang".to_string(), "sleep".to_string()]);
    assert!(res.stderr.contains("2 inner call(s) were still pending"), "{}", res.stderr);
    // the next eval is clean
    let res = ev(&mut r, "await t({ok: true})").await;
    assert_eq!(ok(&res), json!({"ok": true}));
    assert!(res.stderr.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn no_tools_means_no_calls() {
    let mut r = TestSandbox::new().build().await;
    assert_eq!(ok(&ev(&mut r, "typeof t").await), json!("undefined"));
}

#[tokio::test(flavor = "multi_thread")]
async fn in_flight_and_timer_limits_are_enforced() {
    let mut r = TestSandbox::new().tools(test_tools(), TEST_TOOLS).build().await;
    // 1,100 calls that never finish: 1,024 are in flight at the host (the
    // evaluation ends with exactly those abandoned), the rest wait in the
    // guest's queue, and none fails.
    let res = ev(&mut r, "let refused = null; for (let i = 0; i < 1100; i++) { hang({}).catch(e => { refused = refused || e.message }) } await null; await null; refused").await;
    assert_eq!(ok(&res), json!(null), "no call was refused: {res:?}");
    assert_eq!(res.abandoned_calls.len(), 1024, "the host never had more than 1,024 in flight");
    assert!(
        res.stderr.contains("1024 inner call(s) were still pending") && res.stderr.contains("hang \u{d7}1024"),
        "{}",
        res.stderr
    );
    assert!(
        res.stderr.contains("76 more inner call(s) were waiting"),
        "the queued ones are reported too: {}",
        res.stderr
    );
    assert!(res.stderr.len() < 700, "a line each, not a name per call: {}", res.stderr);
    // Promise.all over many more calls than may be in flight: all run, in order.
    let res = ev(&mut r, "const rs = await Promise.all(Array.from({length: 3000}, (_, i) => t({n: i}))); [rs.length, rs.every((r, i) => r.n === i)]").await;
    assert_eq!(ok(&res), json!([3000, true]), "{}", res.stderr);
    assert_eq!(res.calls.len(), 3000);
    let (name, msg) = err(&ev(&mut r, "for (let i = 0; i < 10001; i++) setTimeout(() => {}, 100000)").await);
    assert_eq!(name, "RangeError");
    assert!(msg.contains("too many timers"), "{msg}");
    assert_eq!(ok(&ev(&mut r, "await t({n: 1})").await), json!({"n": 1}));
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_errors_carry_no_internal_frames() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = builder().roots([dir.path()]).build().await.unwrap();
    for code in ["await cat('nope.txt')", "await Read({file_path: 'nope.txt'})", "require('fs')"] {
        let res = ev(&mut r, code).await;
        let e = res.error.as_ref().expect("an error");
        assert!(e.message.contains("nope.txt") || e.name == "SandboxError", "{e:?}");
        assert!(!e.stack.contains("eval_script") && !e.stack.contains("makeToolError"), "{code}: {}", e.stack);
    }
    // The script's own frames stay.
    let res = ev(&mut r, "async function load() { return await cat('nope.txt') }\nawait load()").await;
    let stack = &res.error.as_ref().unwrap().stack;
    assert!(!stack.contains("eval_script"), "{stack}");
    let caught = ok(&ev(&mut r, "try { await cat('nope.txt') } catch (e) { e.stack.includes('eval_script') }").await);
    assert_eq!(caught, json!(false));
}
