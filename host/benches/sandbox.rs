//! Criterion benchmarks of the sandbox core: cold context, warm eval, the
//! host-call round trip (through the WIT boundary and the promise bridge) and
//! restoring a recorded session by replay.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use wrepl::repl::{EvalOptions, Repl, ReplOptions, SessionConfig};
use wrepl::replay::store::{LogStore, SqliteStore};
use wrepl::runtime::{CallFailure, CallFuture, CallHandler, EngineOptions, SandboxEngine, ToolBinding};

/// `t`: echo the input on the next poll.
struct Echo;

impl CallHandler for Echo {
    fn start(&self, _tool: &str, input: &str) -> Result<CallFuture, CallFailure> {
        let input = input.to_string();
        Ok(Box::pin(async move { Ok(input) }))
    }
}

fn options() -> ReplOptions {
    let mut o = ReplOptions::default();
    o.sandbox.handler = Arc::new(Echo);
    o.sandbox.tools = vec![ToolBinding { name: "t".into(), global: "t".into() }];
    o
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let engine = Arc::new(SandboxEngine::new(EngineOptions::default()).unwrap());

    c.bench_function("cold_context_eval", |b| {
        b.to_async(&rt).iter(|| {
            let engine = engine.clone();
            async move {
                let mut r = Repl::with_engine(engine, options()).await.unwrap();
                let res = r.eval("1+1", EvalOptions::default()).await.unwrap();
                assert_eq!(res.result, Some(serde_json::json!(2)));
            }
        })
    });

    let mut repl = rt.block_on(Repl::with_engine(engine.clone(), options())).unwrap();
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
    let session = |store: &Arc<dyn LogStore>| {
        let mut o = options();
        o.session = Some(SessionConfig { name: "bench".into(), store: store.clone(), boundary: "main".into() });
        o
    };
    rt.block_on(async {
        let mut r = Repl::with_engine(engine.clone(), session(&store)).await.unwrap();
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
            let r = rt.block_on(Repl::with_engine(engine.clone(), session(&store))).unwrap();
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
