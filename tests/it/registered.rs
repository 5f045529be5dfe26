//! Script-registered tools (SPEC §5): registration and its limits, model
//! calls through the pipeline (always ask), and restoration by replay.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use wrepl::replay::store::SqliteStore;
use wrepl::{Approver, EvalOptions, Repl};

use crate::support::*;

struct Yes;

impl Approver for Yes {
    fn approve(&self, _tool: &str, _input: &Value, reason: &str) -> BoxFuture<'static, bool> {
        let ok = reason.starts_with("Execute registered tool");
        Box::pin(async move { ok })
    }
}

async fn repl(dir: &std::path::Path, approver: bool, session: Option<(Arc<SqliteStore>, &str)>) -> Repl {
    let mut b = builder().roots([dir]).allow(["Bash"]).session_id("t");
    if approver {
        b = b.approver(Arc::new(Yes));
    }
    if let Some((store, name)) = session {
        b = b.session(store, name);
    }
    b.build().await.unwrap()
}

const DOUBLE: &str = "registerTool('double', 'Doubles n', {type: 'object', properties: {n: {type: 'number'}}, required: ['n']}, async ({n}) => ({doubled: n * 2}), {displayName: 'Double'})";

#[tokio::test(flavor = "multi_thread")]
async fn register_list_and_call_with_approval() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = repl(dir.path(), true, None).await;
    let res = ev(&mut r, DOUBLE).await;
    assert_eq!(ok(&res), json!("eval_registered__double"));
    assert_eq!(res.new_tools, vec!["eval_registered__double".to_string()]);
    let list = ok(&ev(&mut r, "listTools().map(t => [t.name, t.wireName, t.displayName])").await);
    assert_eq!(list, json!([["double", "eval_registered__double", "Double"]]));
    assert_eq!(ok(&ev(&mut r, "getTool('double').inputSchema.required").await), json!(["n"]));
    assert_eq!(ok(&ev(&mut r, "getTool('nope') === undefined").await), json!(true));
    let tools = r.registered_tools();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].input_schema["required"], json!(["n"]));

    let res = r.call_registered("eval_registered__double", json!({"n": 21}), EvalOptions::default()).await.unwrap();
    assert_eq!(ok(&res), json!({"doubled": 42}));
    // schema-checked before anything runs
    let res = r.call_registered("double", json!({"n": "x"}), EvalOptions::default()).await.unwrap();
    assert_eq!(err(&res).0, "ToolInputError");
    // the handler may use inner tools
    ev(
        &mut r,
        "registerTool('echo', 'echo', {type: 'object'}, async (i) => (await sh('echo ' + shQuote(i.s))).trim())",
    )
    .await;
    let res = r.call_registered("echo", json!({"s": "hi there"}), EvalOptions::default()).await.unwrap();
    assert_eq!(ok(&res), json!("hi there"));
    // non-Error throws become readable errors
    ev(&mut r, "registerTool('bad', 'throws', {type: 'object'}, () => { throw {code: 7} })").await;
    let res = r.call_registered("bad", json!({}), EvalOptions::default()).await.unwrap();
    let (name, msg) = err(&res);
    assert_eq!(name, "ToolHandlerError");
    assert!(msg.contains("\"code\":7"), "{msg}");
    assert_eq!(ok(&ev(&mut r, "unregisterTool('bad')").await), json!(true));
    assert_eq!(r.registered_tools().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn registered_tools_always_ask() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = repl(dir.path(), false, None).await;
    ok(&ev(&mut r, DOUBLE).await);
    let res = r.call_registered("double", json!({"n": 1}), EvalOptions::default()).await.unwrap();
    let (name, msg) = err(&res);
    assert_eq!(name, "PermissionDenied");
    assert!(msg.contains("Execute registered tool \"double\""), "{msg}");
}

#[tokio::test(flavor = "multi_thread")]
async fn no_allow_rule_skips_a_registered_tools_question() {
    let dir = tempfile::tempdir().unwrap();
    // Neither a rule naming the tool nor a pattern answers for the person:
    // with nobody to ask, the call is refused, and the message says so.
    for rule in ["eval_registered__double", "eval_registered__double(*)"] {
        let mut r = builder().roots([dir.path()]).allow([rule]).build().await.unwrap();
        let marking =
            "registerTool('double', 'd', {type: 'object'}, async ({n}) => { globalThis.ran = true; return n * 2 })";
        ok(&ev(&mut r, marking).await);
        let res = r.call_registered("double", json!({"n": 4}), EvalOptions::default()).await.unwrap();
        let (name, message) = err(&res);
        assert_eq!(name, "PermissionDenied", "{rule}");
        assert!(message.contains("registered tools always ask, and nobody can be asked"), "{rule}: {message}");
        assert_eq!(ok(&ev(&mut r, "globalThis.ran === undefined").await), json!(true), "{rule}: the handler never ran");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_registered_name_fits_the_protocols_tool_names() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = repl(dir.path(), true, None).await;
    let longest = "x".repeat(47);
    let res = ev(&mut r, &format!("registerTool('{longest}', 'd', {{}}, () => 1)")).await;
    assert_eq!(ok(&res), json!(format!("eval_registered__{longest}")));
    assert_eq!(format!("eval_registered__{longest}").len(), 64);
    // One limit, one message, whatever the length past it (the guest knows
    // the prefix from the host, so it checks the same limit the host does).
    let (mut names, mut messages) = (Vec::new(), std::collections::BTreeSet::new());
    for len in [48, 111, 112, 500] {
        let res = ev(&mut r, &format!("registerTool('x'.repeat({len}), 'd', {{}}, () => 1)")).await;
        let (name, message) = err(&res);
        names.push(name);
        messages.insert(message);
    }
    assert!(names.iter().all(|n| n == "TypeError"), "{names:?}");
    assert_eq!(messages.len(), 1, "{messages:?}");
    let message = messages.first().unwrap();
    assert!(
        message.contains("^[a-zA-Z0-9_-]{1,47}$")
            && message.contains("eval_registered__<name>")
            && message.contains("64 characters"),
        "{message}"
    );
    assert_eq!(ok(&ev(&mut r, "listTools().map(t => t.name.length)").await), json!([47]));
}

#[tokio::test(flavor = "multi_thread")]
async fn registration_abuse_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = repl(dir.path(), true, None).await;
    for code in [
        "registerTool('bad name', 'd', {}, () => 1)",
        "registerTool('x'.repeat(48), 'd', {}, () => 1)",
        "registerTool('', 'd', {}, () => 1)",
        "registerTool('console', 'd', {}, () => 1)",
        "registerTool('sh', 'd', {}, () => 1)",
        "registerTool('ok', 'd', [], () => 1)",
        "registerTool('ok', 'd', {a: 1n}, () => 1)",
        "registerTool('ok', 'd', {}, 'not a function')",
        "registerTool('ok', 'd'.repeat(10001), {}, () => 1)",
        "registerTool('ok', 'd', {type: 'no-such-type'}, () => 1)",
        "registerTool('ok', 'd', {p: 'x'.repeat(70000)}, () => 1)",
    ] {
        let res = ev(&mut r, code).await;
        assert!(res.error.is_some(), "{code} should be refused: {:?}", res.result);
    }
    assert!(r.registered_tools().is_empty());
    let res = ev(&mut r, "for (let i = 0; i < 101; i++) registerTool('t' + i, 'd', {}, () => i)").await;
    assert!(err(&res).1.contains("at most 100"), "{:?}", res.error);
    assert_eq!(r.registered_tools().len(), 100);
}

#[tokio::test(flavor = "multi_thread")]
async fn registered_tools_come_back_through_replay() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("count"), "").unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("s.sqlite3")).unwrap());
    {
        let mut r = repl(dir.path(), true, Some((store.clone(), "reg"))).await;
        ok(&ev(&mut r, "let calls = 0; registerTool('tick', 'counts', {type: 'object'}, async () => { calls++; await sh('echo t >> count'); return calls })").await);
        let res = r.call_registered("tick", json!({}), EvalOptions::default()).await.unwrap();
        assert_eq!(ok(&res), json!(1));
    }
    // a new context resumed from the log: the tool and its state are back, nothing re-ran
    let mut r = repl(dir.path(), true, Some((store.clone(), "reg"))).await;
    let report = r.restore_report().unwrap().clone();
    assert!(report.blocks.iter().all(|b| b.verdict == wrepl::replay::player::Verdict::Ok), "{report:?}");
    assert_eq!(r.registered_tools().len(), 1);
    assert_eq!(std::fs::read_to_string(dir.path().join("count")).unwrap(), "t\n");
    let res = r.call_registered("tick", json!({}), EvalOptions::default()).await.unwrap();
    assert_eq!(ok(&res), json!(2));
    assert_eq!(std::fs::read_to_string(dir.path().join("count")).unwrap(), "t\nt\n");
}
