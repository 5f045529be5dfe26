//! Script budget, wall clock, cancellation, fuel and instance faults.

use std::time::{Duration, Instant};

use serde_json::json;
use wrepl::EvalOptions;
use wrepl::{CancellationToken, EngineOptions};

use crate::support::*;

#[tokio::test(flavor = "multi_thread")]
async fn infinite_loop_times_out_and_the_context_survives() {
    let mut r = TestSandbox::new().build().await;
    ev(&mut r, "let kept = 1").await;
    let t = Instant::now();
    let res = ev_timeout(&mut r, "while (true) {}", 1000).await;
    // It needs about 1 s; far less than it would take if nothing stopped it.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(res.timed_out);
    let (name, msg) = err(&res);
    assert_eq!(name, "TimeoutError");
    assert!(msg.contains("1000 ms"), "{msg}");
    // try/catch cannot swallow the interrupt
    let res = ev_timeout(&mut r, "for (;;) { try { while (true) {} } catch (e) {} }", 300).await;
    assert!(res.timed_out);
    assert_eq!(ok(&ev(&mut r, "kept + 1").await), json!(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn async_loops_and_microtask_floods_time_out() {
    let mut r = TestSandbox::new().build().await;
    let res = ev_timeout(&mut r, "async function spin() { for (;;) await null } await spin()", 300).await;
    assert!(res.timed_out, "{:?}", res.error);
    let res = ev_timeout(
        &mut r,
        "function flood() { Promise.resolve().then(flood) } flood(); await new Promise(() => {})",
        300,
    )
    .await;
    assert!(res.timed_out, "{:?}", res.error);
    let res = ev_timeout(&mut r, "await new Promise(r => setTimeout(r, 5000))", 200).await;
    assert!(res.timed_out, "a timer wait counts as script time: {:?}", res.error);
    assert_eq!(ok(&ev(&mut r, "'alive'").await), json!("alive"));
}

#[tokio::test(flavor = "multi_thread")]
async fn script_time_pauses_while_inner_calls_run() {
    let mut r = TestSandbox::new().tools(test_tools(), TEST_TOOLS).build().await;
    // 600 ms of tool time under a 300 ms script budget.
    let res = ev_timeout(&mut r, "await sleep({ms: 300}); await sleep({ms: 300}); 'done'", 300).await;
    assert_eq!(ok(&res), json!("done"));
    assert!(res.script_ms < 300.0, "script time {}", res.script_ms);
    assert!(res.wall_ms >= 600.0, "wall time {}", res.wall_ms);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pending_call_does_not_pause_a_busy_script() {
    // Script time pauses only while the guest waits for calls, not while it
    // computes with a call in flight.
    let mut r = TestSandbox::new().tools(test_tools(), TEST_TOOLS).build().await;
    let t = Instant::now();
    let res = ev_timeout(&mut r, "hang({}); while (true) {}", 300).await;
    assert!(res.timed_out, "{:?}", res.error);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread")]
async fn wall_clock_ends_a_hanging_inner_call() {
    let mut r = TestSandbox::new().tools(test_tools(), TEST_TOOLS).hard_wall(Duration::from_millis(400)).build().await;
    let t = Instant::now();
    let res = ev(&mut r, "await hang({})").await;
    assert!(t.elapsed() < Duration::from_secs(3));
    assert!(res.timed_out);
    let (_, msg) = err(&res);
    assert!(msg.contains("wall-clock"), "{msg}");
    assert_eq!(res.abandoned_calls, vec!["hang".to_string()]);
    assert!(res.stderr.contains("aborted"), "{}", res.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn cancellation_stops_the_eval() {
    let mut r = TestSandbox::new().build().await;
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c2.cancel();
    });
    let res = r.eval("while (true) {}", EvalOptions { cancel, ..Default::default() }).await.unwrap();
    let (name, _) = err(&res);
    assert_eq!(name, "AbortError");
    assert!(!res.timed_out);
    assert_eq!(ok(&ev(&mut r, "1").await), json!(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unresponsive_guest_is_killed_and_replaced() {
    // Without a graceful stop, the first budget check after the budget ran
    // out kills the instance: the trap path (poisoned instance -> fresh context).
    let mut r = TestSandbox::new()
        .engine(EngineOptions { graceful_stop: false, cache_dir: None, pool_slots: 4, ..Default::default() })
        .build()
        .await;
    ev(&mut r, "let lost = 1").await;
    let t = Instant::now();
    let res = ev_timeout(&mut r, "while (true) {}", 200).await;
    assert!(t.elapsed() < Duration::from_secs(3));
    assert!(res.timed_out);
    assert!(res.context_reset.is_some(), "the result says the context was lost");
    let next = ev(&mut r, "typeof lost").await;
    assert_eq!(ok(&next), json!("undefined"));
    assert!(next.context_reset.as_deref().unwrap_or("").contains("fresh context"), "{:?}", next.context_reset);
    assert!(next.stderr.contains("fresh context"));
    // and the one after is a normal eval
    assert!(ev(&mut r, "1").await.context_reset.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn fuel_budget_is_deterministic_and_resets_the_context() {
    let mut r = TestSandbox::new()
        .engine(EngineOptions { fuel: true, cache_dir: None, pool_slots: 4, ..Default::default() })
        .build()
        .await;
    let small = EvalOptions { fuel: Some(50_000_000), ..Default::default() };
    let res = r.eval("let s = 0; for (let i = 0; i < 1000; i++) s += i; s", small.clone()).await.unwrap();
    assert_eq!(ok(&res), json!(499500));
    let res = r.eval("while (true) {}", small).await.unwrap();
    let (name, msg) = err(&res);
    assert_eq!(name, "RangeError");
    assert!(msg.contains("fuel"), "{msg}");
    assert!(res.context_reset.is_some());
    let res = ev(&mut r, "typeof s").await;
    assert_eq!(ok(&res), json!("undefined"));
}
