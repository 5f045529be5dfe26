//! The context manager (keys, boundaries, hydration) and poisoned contexts.

use std::sync::Arc;

use serde_json::json;
use wrepl::replay::store::SqliteStore;
use wrepl::{context::ContextManager, context::ContextStatus, context::Hydration};

use crate::support::*;

fn manager(store: Option<Arc<SqliteStore>>) -> ContextManager {
    let template = builder().without_builtin_tools().repo_hint("repo: /work/project (main)");
    ContextManager::new(template, store.map(|s| s as Arc<dyn wrepl::replay::store::LogStore>))
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_are_isolated_and_boundaries_rebuild() {
    let mut m = manager(None);
    let (r, st) = m.get("main", "b1", Hydration::Fresh).await.unwrap();
    assert!(matches!(st, ContextStatus::Built { .. }));
    ev(r, "let who = 'main'").await;
    let (r, _) = m.get("agent-1", "b1", Hydration::Fresh).await.unwrap();
    assert_eq!(ok(&ev(r, "typeof who").await), json!("undefined"));
    let (r, st) = m.get("main", "b1", Hydration::Fresh).await.unwrap();
    assert_eq!(st, ContextStatus::Reused);
    assert_eq!(ok(&ev(r, "who").await), json!("main"));
    let (r, st) = m.get("main", "b2", Hydration::Fresh).await.unwrap();
    assert!(matches!(st, ContextStatus::Built { .. }));
    assert_eq!(ok(&ev(r, "typeof who").await), json!("undefined"));
    let mut keys = m.keys();
    keys.sort();
    assert_eq!(keys, vec!["agent-1".to_string(), "main".to_string()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_and_fork_replay_logs() {
    let store = Arc::new(SqliteStore::in_memory().unwrap());
    {
        let mut m = manager(Some(store.clone()));
        let (r, _) = m.get("main", "b1", Hydration::Fresh).await.unwrap();
        ev(r, "let kept = 41").await;
    }
    let mut m = manager(Some(store.clone()));
    let (r, st) = m.get("main", "b1", Hydration::Resume).await.unwrap();
    assert_eq!(st, ContextStatus::Built { hydration: Hydration::Resume, note: None });
    assert_eq!(ok(&ev(r, "kept + 1").await), json!(42));
    // fork of a live parent starts fresh
    let (r, st) = m.get("child", "b1", Hydration::Fork { key: "main".into(), boundary: "b1".into() }).await.unwrap();
    match st {
        ContextStatus::Built { hydration: Hydration::Fresh, note: Some(n) } => assert!(n.contains("live"), "{n}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(ok(&ev(r, "typeof kept").await), json!("undefined"));
    // fork of a parent that is not live replays its log
    m.remove("main");
    let (r, st) = m.get("child2", "b1", Hydration::Fork { key: "main".into(), boundary: "b1".into() }).await.unwrap();
    assert!(matches!(st, ContextStatus::Built { hydration: Hydration::Fork { .. }, .. }), "{st:?}");
    assert_eq!(ok(&ev(r, "kept").await), json!(41));
    // a fresh context for a known boundary starts empty
    let (r, _) = m.get("main", "b1", Hydration::Fresh).await.unwrap();
    assert_eq!(ok(&ev(r, "typeof kept").await), json!("undefined"));
}

#[tokio::test(flavor = "multi_thread")]
async fn tampered_managed_globals_poison_the_context() {
    let mut m = manager(None);
    let (r, _) = m.get("main", "b", Hydration::Fresh).await.unwrap();
    ev(r, "let mine = 1").await;
    assert_eq!(ok(&ev(r, "repoHint").await), json!("repo: /work/project (main)"));
    // replacing a managed global is undone at the next evaluation
    ev(r, "console = { log() {} }").await;
    let res = ev(r, "console.log('back'); mine").await;
    assert_eq!(res.stdout, "back\n");
    assert_eq!(ok(&res), json!(1));
    // making one non-configurable poisons the context
    ev(r, "Object.defineProperty(globalThis, 'setTimeout', { value: 1, configurable: false, writable: false })").await;
    let res = ev(r, "typeof mine").await;
    assert_eq!(ok(&res), json!("undefined"), "the evaluation ran in a fresh context");
    let note = res.context_reset.clone().unwrap_or_default();
    assert!(note.contains("poisoned") && note.contains("setTimeout"), "{note}");
    assert_eq!(ok(&ev(r, "[repoHint, typeof setTimeout]").await), json!(["repo: /work/project (main)", "function"]));
    // freezing the global object too
    ev(r, "Object.freeze(globalThis)").await;
    let res = ev(r, "'after freeze'").await;
    assert_eq!(ok(&res), json!("after freeze"));
    assert!(res.context_reset.is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn managed_globals_replaced_in_any_way_are_restored() {
    let mut m = manager(None);
    let (r, _) = m.get("main", "b", Hydration::Fresh).await.unwrap();
    ev(r, "let mine = 7").await;
    // an accessor that returns the very same value, the same value made
    // enumerable or read-only, a deleted global, and a plain reassignment
    ev(
        r,
        "const keep = console; Object.defineProperty(globalThis, 'console', { get() { return keep }, configurable: true });
         Object.defineProperty(globalThis, 'str', { value: str, enumerable: true, configurable: true, writable: true });
         Object.defineProperty(globalThis, 'shQuote', { value: shQuote, writable: false, configurable: true });
         delete globalThis.setTimeout; clearTimeout = 1;",
    )
    .await;
    let res = ev(
        r,
        "const d = (n) => { const x = Object.getOwnPropertyDescriptor(globalThis, n); return [typeof x.value, 'get' in x, x.enumerable, x.writable, x.configurable] };
         [d('console'), d('str'), d('shQuote'), d('setTimeout'), d('clearTimeout'), mine]",
    )
    .await;
    let data = json!(["function", false, false, true, true]);
    let console = json!(["object", false, false, true, true]);
    assert_eq!(ok(&res), json!([console, data, data, data, data, 7]), "{res:?}");
    assert!(res.context_reset.is_none(), "{res:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_primitive_result_still_runs_queued_jobs_first() {
    let mut m = manager(None);
    let (r, _) = m.get("main", "b", Hydration::Fresh).await.unwrap();
    let res =
        ev(r, "Promise.resolve().then(() => console.log('job ran')); queueMicrotask(() => { globalThis.late = 1 }); 5")
            .await;
    assert_eq!(ok(&res), json!(5));
    assert_eq!(res.stdout, "job ran\n");
    assert_eq!(ok(&ev(r, "late").await), json!(1));
    // and a job that loops is stopped by the budget like any script
    let res = r
        .eval(
            "queueMicrotask(() => { for (;;) {} }); 1",
            wrepl::EvalOptions { timeout: Some(std::time::Duration::from_millis(200)), ..Default::default() },
        )
        .await
        .unwrap();
    assert!(res.timed_out, "{res:?}");
    assert_eq!(ok(&ev(r, "late + 1").await), json!(2));
}
