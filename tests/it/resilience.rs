//! Crash safety and load of `wrepl serve`: kill -9 at random points during a
//! durable session, restart, resume, and prove every completed side effect
//! happened exactly once; many concurrent HTTP sessions with the server's
//! RSS and file descriptors sampled.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use wrepl::replay::log::Event;
use wrepl::replay::store::{LogStore, SqliteStore};

/// A small deterministic PRNG (xorshift64*), so a failing run can be repeated.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn args(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("arguments must be an object"),
    }
}

async fn repl(service: &RunningService<RoleClient, ()>, code: &str) -> CallToolResult {
    tokio::time::timeout(
        Duration::from_secs(60),
        service.call_tool(CallToolRequestParams::new("repl").with_arguments(args(json!({"code": code})))),
    )
    .await
    .expect("repl call timed out")
    .expect("repl call failed at the protocol level")
}

fn structured(r: &CallToolResult) -> Value {
    r.structured_content.clone().unwrap_or(Value::Null)
}

/// Start `wrepl serve` on stdio; returns the client and the server's pid.
async fn start(root: &Path, store: &Path) -> (RunningService<RoleClient, ()>, u32) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_wrepl"));
    cmd.arg("serve").arg("--root").arg(root).args(["--allow", "Bash", "--session", "crash", "--store"]).arg(store);
    let transport = TokioChildProcess::builder(cmd).stderr(std::process::Stdio::null()).spawn().unwrap().0;
    let pid = transport.id().expect("server pid");
    let service = ().serve(transport).await.expect("MCP handshake");
    (service, pid)
}

/// The effect tokens in `effects.log`, with how often each appears.
fn effects(root: &Path) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for line in std::fs::read_to_string(root.join("effects.log")).unwrap_or_default().lines() {
        *m.entry(line.to_string()).or_insert(0) += 1;
    }
    m
}

#[tokio::test]
async fn kill_9_at_random_points_never_repeats_or_loses_a_completed_side_effect() {
    const KILLS: usize = 10;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let store_path = dir.path().join("store.sqlite3");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut unknown_seen = 0usize;
    let mut next_eval = 0usize;
    // Evaluations that were awaited to their end (the killed ones may or may not have finished).
    let mut finished: Vec<usize> = Vec::new();
    for kill in 0..KILLS {
        let (service, pid) = start(&root, &store_path).await;
        // The first call resumes the session: every earlier block is replayed, none re-runs.
        let r = repl(&service, "'resumed'").await;
        assert_eq!(structured(&r)["result"], json!("resumed"), "{r:?}");
        if kill > 0 {
            let blocks = structured(&r)["replay"]["blocks"].as_array().cloned().unwrap_or_default();
            assert!(!blocks.is_empty(), "restart {kill}: nothing was replayed: {r:?}");
            unknown_seen += blocks.iter().map(|b| b["outcome_unknown"].as_array().map_or(0, Vec::len)).sum::<usize>();
        }
        // A few complete evaluations, then one that is killed at a random point.
        let complete = rng.below(3) as usize;
        for j in 0..=complete {
            let i = next_eval;
            next_eval += 1;
            let code = format!(
                "await sh('echo e{i}-a >> effects.log'); await sh('sleep 0.0{d}; echo e{i}-b >> effects.log'); var v{i} = {i}",
                d = rng.below(5)
            );
            let call = repl(&service, &code);
            if j == complete {
                // kill somewhere inside this evaluation (or just before/after it)
                let delay = Duration::from_millis(rng.below(60));
                tokio::select! {
                    _ = call => {}
                    _ = tokio::time::sleep(delay) => {}
                }
                // SAFETY: kill(2) has no memory-safety preconditions; `pid` is our own child.
                #[allow(unsafe_code)]
                unsafe {
                    libc::kill(pid as i32, libc::SIGKILL)
                };
            } else {
                let r = call.await;
                assert_ne!(r.is_error, Some(true), "{r:?}");
                finished.push(i);
            }
        }
        drop(service);
        // Let the killed server's orphaned shell commands (if any) finish.
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    // Final restart: the variables of completed evaluations are back.
    let (service, _) = start(&root, &store_path).await;
    assert!(!finished.is_empty(), "the seeded schedule finishes some evaluation");
    let names: Vec<String> = finished.iter().map(|i| format!("typeof v{i}")).collect();
    let r = repl(&service, &format!("[{}]", names.join(", "))).await;
    assert_eq!(structured(&r)["result"], json!(vec!["number"; finished.len()]), "{r:?}");
    service.cancel().await.unwrap();

    // Every recorded call: completed ones happened exactly once; in-flight ones at most once.
    let store = SqliteStore::open(&store_path).unwrap();
    assert!(store.verify("crash").unwrap().ok, "the hash chain is broken");
    let events = store.load("crash").unwrap();
    let seen = effects(&root);
    let mut calls: Vec<(u64, String)> = Vec::new();
    let mut done: Vec<(u64, u32)> = Vec::new();
    let mut recorded = 0;
    for e in &events {
        match &e.event {
            Event::Call { tool, input, .. } if tool == "Bash" => {
                let cmd: Value = serde_json::from_str(input).unwrap();
                let cmd = cmd["command"].as_str().unwrap().to_string();
                calls.push((e.block, cmd));
            }
            Event::Done { call, ok: true, .. } => done.push((e.block, *call)),
            _ => {}
        }
    }
    // Index calls per block to match `Done { call }`.
    let mut per_block: HashMap<u64, Vec<String>> = HashMap::new();
    for (b, cmd) in &calls {
        per_block.entry(*b).or_default().push(cmd.clone());
    }
    let token = |cmd: &str| cmd.split_whitespace().find(|w| w.starts_with('e') && w.contains('-')).map(str::to_string);
    for (b, i) in &done {
        let cmd = &per_block[b][*i as usize];
        let t = token(cmd).unwrap();
        assert_eq!(seen.get(&t).copied(), Some(1), "completed call {cmd:?} must have happened exactly once");
        recorded += 1;
    }
    let intended: std::collections::HashSet<String> = calls.iter().filter_map(|(_, c)| token(c)).collect();
    for (t, n) in &seen {
        assert_eq!(*n, 1, "effect {t} happened {n} times");
        assert!(intended.contains(t), "effect {t} has no recorded intent");
    }
    assert!(recorded >= KILLS, "too few completed calls recorded: {recorded}");
    eprintln!(
        "crash safety: {KILLS} kills, {} evaluations, {} intents, {recorded} completed, {unknown_seen} outcome_unknown verdicts reported over the restarts",
        next_eval,
        intended.len()
    );
}

fn proc_status(pid: u32, key: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(key).map(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().unwrap()))
        .unwrap()
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

#[tokio::test]
async fn soak_concurrent_http_sessions_have_flat_rss_and_fds() {
    const ROUNDS: usize = 4;
    const SESSIONS: usize = 6;
    const EVALS: usize = 25;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.txt"), "alpha\nbeta\ngamma\n").unwrap();
    let (mut child, url) = crate::mcp_server::start_http(dir.path(), &[]).await;
    let pid = child.id().unwrap();
    let mut samples = Vec::new();
    for round in 0..ROUNDS {
        let mut tasks = Vec::new();
        for s in 0..SESSIONS {
            let url = url.clone();
            tasks.push(tokio::spawn(async move {
                let c = ().serve(StreamableHttpClientTransport::from_uri(url)).await.unwrap();
                for e in 0..EVALS {
                    let code = format!(
                        "var acc = (globalThis.acc || 0) + {e}; const big = new Array(20000).fill('{s}'); \
                         const t = await cat('data.txt'); registerTool('t{e}', 'd', {{type: 'object'}}, () => 1); \
                         unregisterTool('t{e}'); [acc, big.length, t.length]"
                    );
                    let r = repl(&c, &code).await;
                    assert_eq!(structured(&r)["result"][1], json!(20000), "{r:?}");
                }
                let r = repl(&c, "acc").await;
                assert_eq!(structured(&r)["result"], json!((0..EVALS).sum::<usize>()));
                c.cancel().await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        // Closed sessions must release their instances.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let rss = proc_status(pid, "VmRSS:");
        let fds = open_fds(pid);
        eprintln!("soak round {round}: RSS {rss} kB, {fds} fds");
        samples.push((rss, fds));
    }
    // After warm-up (round 0), RSS and descriptors stay flat.
    let (base_rss, base_fds) = samples[1];
    let (last_rss, last_fds) = samples[ROUNDS - 1];
    assert!(
        last_rss <= base_rss + 24 * 1024,
        "RSS grew from {base_rss} kB to {last_rss} kB over {} sessions x {EVALS} evals",
        SESSIONS * (ROUNDS - 2)
    );
    assert!(last_fds <= base_fds + 4, "file descriptors grew from {base_fds} to {last_fds}");
    child.kill().await.unwrap();
}
