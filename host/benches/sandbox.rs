//! Criterion benchmarks of the sandbox core: cold context, warm eval, the
//! host-call round trip (through the WIT boundary, the promise bridge and the pipeline),
//! restoring a recorded session by replay and from a snapshot, taking a snapshot of a
//! 10 MiB heap, and waking a context from its snapshot.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use wrepl::replay::store::{LogStore, SqliteStore};
use wrepl::{EngineOptions, EvalOptions, Repl, ReplBuilder, SandboxEngine, SessionConfig};

/// The template: only the test tool `t` (echo), through the real pipeline.
fn options(engine: &Arc<SandboxEngine>) -> ReplBuilder {
    Repl::builder()
        .engine(engine.clone())
        .roots([std::env::temp_dir()])
        .without_builtin_tools()
        .tool(Arc::new(wrepl::testing::echo()))
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let engine = Arc::new(SandboxEngine::new(EngineOptions::default()).unwrap());
    let template = options(&engine);

    c.bench_function("cold_context_eval", |b| {
        b.to_async(&rt).iter(|| {
            let template = template.clone();
            async move {
                let mut r = template.build().await.unwrap();
                let res = r.eval("1+1", EvalOptions::default()).await.unwrap();
                assert_eq!(res.result, Some(serde_json::json!(2)));
            }
        })
    });

    let mut repl = rt.block_on(template.build()).unwrap();
    c.bench_function("warm_eval", |b| {
        b.iter(|| {
            rt.block_on(repl.eval("globalThis.x = (globalThis.x|0) + 1", EvalOptions::default())).unwrap();
        })
    });

    c.bench_function("warm_eval_with_declaration", |b| {
        b.iter(|| {
            rt.block_on(repl.eval("const y = 1; y + 1", EvalOptions::default())).unwrap();
        })
    });

    let mut group = c.benchmark_group("host_call");
    group.throughput(criterion::Throughput::Elements(1000));
    group.bench_function("1000_sequential_round_trips", |b| {
        b.iter(|| {
            let res = rt
                .block_on(repl.eval(
                    "(async () => { let s = 0; for (let i = 0; i < 1000; i++) { s += (await t({i})).i } return s })()",
                    EvalOptions::default(),
                ))
                .unwrap();
            assert_eq!(res.result, Some(serde_json::json!(499500)));
        })
    });
    group.finish();

    // 1,000 recorded blocks of 10 calls each, restored by replay (target:
    // at most 200 ms): every block is evaluated again with its calls answered
    // from the log. Snapshots off, so that all of it is replayed.
    let store: Arc<dyn LogStore> = Arc::new(SqliteStore::in_memory().unwrap());
    let replay_only = SessionConfig { snapshot_after: None, ..SessionConfig::new("bench", store.clone()) };
    let session = options(&engine).session_config(Some(replay_only));
    rt.block_on(async {
        let mut r = session.build().await.unwrap();
        for b in 0..1000 {
            let code = format!(
                "(async () => {{ let s = {b}; for (let i = 0; i < 10; i++) {{ s += (await t({{i}})).i }} return s }})()"
            );
            let res = r.eval(&code, EvalOptions::default()).await.unwrap();
            assert_eq!(res.result, Some(serde_json::json!(b + 45)));
        }
    });
    let mut group = c.benchmark_group("restore");
    group.sample_size(10);
    group.bench_function("1000_blocks_of_10_calls", |b| {
        b.iter(|| {
            let r = rt.block_on(session.build()).unwrap();
            let report = r.restore_report().expect("a restore report");
            assert!(report.summary.starts_with("restored 1000 block(s): 1000 ok"), "{}", report.summary);
        })
    });
    // The same log with a snapshot after its last block: resume loads it
    // and replays nothing.
    let with_snapshot = options(&engine).session_config(Some(SessionConfig {
        snapshot_after: Some(std::time::Duration::ZERO),
        ..SessionConfig::new("bench", store.clone())
    }));
    rt.block_on(async {
        let mut r = with_snapshot.build().await.unwrap();
        r.eval("1", EvalOptions::default()).await.unwrap();
    });
    group.bench_function("1001_blocks_from_a_snapshot", |b| {
        b.iter(|| {
            let r = rt.block_on(with_snapshot.build()).unwrap();
            let report = r.restore_report().expect("a restore report");
            assert!(report.summary.contains("(after block 1000), then 0 block(s)"), "{}", report.summary);
        })
    });
    group.finish();

    // Taking a snapshot of a context with a 10 MiB heap (target: at most
    // 20 ms): one evaluation of `1` in a session that snapshots after
    // every block, against the same evaluation in one that never does.
    let mut group = c.benchmark_group("snapshot");
    group.sample_size(20);
    // About 10 MiB of guest memory past a fresh context's.
    let heap = "globalThis.big = Array.from({length: 75000}, (_, i) => ({i, s: 'item ' + i, f: i / 7})); big.length";
    for (name, after) in
        [("eval_1_10mib_heap_no_snapshot", None), ("eval_1_10mib_heap_with_snapshot", Some(std::time::Duration::ZERO))]
    {
        let store: Arc<dyn LogStore> = Arc::new(SqliteStore::in_memory().unwrap());
        let cfg = SessionConfig { snapshot_after: after, ..SessionConfig::new("heap", store) };
        let mut r = rt.block_on(options(&engine).session_config(Some(cfg)).build()).unwrap();
        rt.block_on(r.eval(heap, EvalOptions::default())).unwrap();
        group.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(r.eval("1", EvalOptions::default())).unwrap();
            })
        });
    }
    group.finish();

    // Waking a context from its snapshot (target: at most 5 ms): a session
    // of one block, resumed in a new context (lease, log check, snapshot
    // load and restore).
    let store: Arc<dyn LogStore> = Arc::new(SqliteStore::in_memory().unwrap());
    let cfg = SessionConfig { snapshot_after: Some(std::time::Duration::ZERO), ..SessionConfig::new("idle", store) };
    let idle = options(&engine).session_config(Some(cfg));
    rt.block_on(async {
        idle.build().await.unwrap().eval("globalThis.v = {a: [1, 2, 3]}; 1", EvalOptions::default()).await.unwrap()
    });
    c.bench_function("wake_from_snapshot", |b| {
        b.iter(|| {
            let r = rt.block_on(idle.build()).unwrap();
            assert!(r.restore_report().is_some_and(|x| x.snapshot.is_some()));
        })
    });
}

criterion_group! {
    name = sandbox;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(4));
    targets = benches
}
criterion_main!(sandbox);
