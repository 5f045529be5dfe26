//! Criterion benchmarks of the sandbox core: cold context, warm eval, the
//! host-call round trip (through the WIT boundary, the promise bridge and the pipeline) and
//! restoring a recorded session by replay.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use wrepl::replay::store::{LogStore, SqliteStore};
use wrepl::{EngineOptions, EvalOptions, Repl, ReplBuilder, SandboxEngine};

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
    // from the log.
    let store: Arc<dyn LogStore> = Arc::new(SqliteStore::in_memory().unwrap());
    let session = options(&engine).session(store.clone(), "bench");
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
    group.finish();
}

criterion_group! {
    name = sandbox;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(4));
    targets = benches
}
criterion_main!(sandbox);
