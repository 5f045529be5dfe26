//! The PostgreSQL store against a real server (`scripts/pg-cluster.sh`
//! starts a throw-away cluster; `scripts/test.sh` passes its URL in
//! `WREPL_TEST_POSTGRES` and requires it): the store's contract, tamper
//! detection, leases, and two `wrepl serve --http` instances sharing one
//! database.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use wrepl::replay::log::Event;
use wrepl::replay::store::{LeaseOwner, LeaseTaken, LogStore, PostgresStore, StoreError};

use rmcp::service::{RoleClient, RunningService};

use super::mcp_server::{
    call, http_transport, modern, modern_client, spawn_http, structured, text, HttpServer, TestClient,
};

/// The test cluster's URL, or `None` (with a note) when there is none and
/// `WREPL_REQUIRE_POSTGRES` is not `1`.
fn cluster() -> Option<String> {
    if let Ok(url) = std::env::var("WREPL_TEST_POSTGRES") {
        return Some(url);
    }
    if std::env::var("WREPL_REQUIRE_POSTGRES").as_deref() == Ok("1") {
        panic!("WREPL_TEST_POSTGRES is not set: scripts/test.sh starts a cluster (scripts/pg-cluster.sh)");
    }
    eprintln!("note: skipping a PostgreSQL test: WREPL_TEST_POSTGRES is not set (scripts/test.sh sets it)");
    None
}

/// A fresh database of its own on the test cluster; its URL. (The
/// synchronous client runs on a thread of its own: never inside a runtime.)
pub(crate) fn fresh_db() -> Option<String> {
    let url = cluster()?;
    std::thread::spawn(move || create_db(url)).join().unwrap()
}

fn create_db(url: String) -> Option<String> {
    let mut b = [0u8; 6];
    getrandom::fill(&mut b).unwrap();
    let name = format!("t_{}", b.iter().map(|x| format!("{x:02x}")).collect::<String>());
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("connect to the test cluster");
    admin.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
    // postgresql://user@/DB?host=… or postgresql://user@host/DB
    let (head, query) = url.split_once('?').map_or((url.as_str(), ""), |(h, q)| (h, q));
    let base = &head[..head.rfind('/').expect("a database in the URL")];
    Some(if query.is_empty() { format!("{base}/{name}") } else { format!("{base}/{name}?{query}") })
}

fn begin(code: &str) -> Event {
    Event::Begin { code: code.into(), boundary: "main".into(), view: Default::default() }
}

#[test]
fn the_store_contract_holds_on_postgres() {
    let Some(url) = fresh_db() else { return };
    let store = PostgresStore::open(&url).unwrap();
    // A second open (another server starting) finds the schema and agrees.
    let other = PostgresStore::open(&url).unwrap();
    assert!(store.shared());
    let events = [(0, begin("a")), (0, Event::Now { us: 1.0 }), (1, begin("b"))];
    let stored = store.append("s", &events).unwrap();
    assert_eq!(stored.len(), 3);
    assert_eq!(other.load("s").unwrap().iter().map(|e| e.seq).collect::<Vec<_>>(), vec![0, 1, 2]);
    assert_eq!(store.head("s").unwrap().unwrap().events, 3);
    assert!(store.verify("s").unwrap().ok);
    assert!(store.append("s", &[(0, Event::Now { us: 2.0 })]).is_err(), "blocks never go backwards");
    assert_eq!(
        store.sessions().unwrap().iter().map(|s| (s.name.as_str(), s.blocks)).collect::<Vec<_>>(),
        vec![("s", 2)]
    );

    // Leases: one writer; another live owner is busy; a stale one is taken over; appends are fenced.
    let a = LeaseOwner { id: "owner-a".into(), host: "elsewhere".into(), ..LeaseOwner::this_process() };
    let b = LeaseOwner { id: "owner-b".into(), host: "elsewhere-too".into(), ..LeaseOwner::this_process() };
    assert!(matches!(store.acquire_lease("s", &a, Duration::from_secs(10)).unwrap(), LeaseTaken::Free));
    assert!(matches!(other.acquire_lease("s", &b, Duration::from_secs(10)), Err(StoreError::SessionBusy { .. })));
    store.append_leased("s", "owner-a", &[(1, Event::Now { us: 3.0 })]).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let taken = other.acquire_lease("s", &b, Duration::from_millis(1)).unwrap();
    assert!(matches!(taken, LeaseTaken::TakenOver { .. }), "{taken:?}");
    assert!(matches!(
        store.append_leased("s", "owner-a", &[(1, Event::Now { us: 4.0 })]),
        Err(StoreError::LeaseLost { .. })
    ));
    assert!(matches!(store.renew_lease("s", "owner-a"), Err(StoreError::LeaseLost { .. })));
    other.renew_lease("s", "owner-b").unwrap();
    assert!(matches!(store.delete("s"), Err(StoreError::SessionBusy { .. })), "a live lease keeps the session");
    other.release_lease("s", "owner-b").unwrap();

    // Secrets are made once and shared; activity only moves forward.
    let k = store.secret("k").unwrap();
    assert_eq!(k.len(), 32);
    assert_eq!(other.secret("k").unwrap(), k);
    store.touch("s", 50).unwrap();
    store.touch("s", 40).unwrap();
    assert_eq!(other.touched("s").unwrap(), Some(50));

    // Tampering is caught: an altered event, then the newest rows removed.
    let mut raw = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    raw.execute("UPDATE wrepl_events SET json = replace(json, '\"a\"', '\"A\"') WHERE session = 's' AND seq = 0", &[])
        .unwrap();
    let report = store.verify("s").unwrap();
    assert!(!report.ok);
    assert_eq!(report.first_bad.unwrap().seq, 0);
    let aside = store.quarantine("s").unwrap();
    assert!(aside.starts_with("s.tampered-"), "{aside}");
    assert!(!store.verify(&aside).unwrap().ok, "the evidence keeps failing");
    store.append("t", &[(0, begin("x")), (0, Event::Now { us: 1.0 })]).unwrap();
    raw.execute("DELETE FROM wrepl_events WHERE session = 't' AND seq = 1", &[]).unwrap();
    let report = store.verify("t").unwrap();
    assert!(!report.ok && report.first_bad.unwrap().reason.contains("head"), "truncation is caught");
    assert!(store.append("t", &[(1, begin("y"))]).is_err(), "a truncated log is not extended");
    store.delete("t").unwrap();
    assert!(store.head("t").unwrap().is_none());

    // Leased appends after the first take one round trip (the database checks
    // that nothing moved): a row removed behind the writer's back is still caught.
    let me = LeaseOwner { id: "owner-u".into(), ..LeaseOwner::this_process() };
    store.acquire_lease("u", &me, Duration::from_secs(10)).unwrap();
    for i in 0..5 {
        store.append_leased("u", "owner-u", &[(i, begin("b")), (i, Event::Now { us: 1.0 })]).unwrap();
    }
    assert!(store.verify("u").unwrap().ok);
    assert_eq!(other.load("u").unwrap().len(), 10);
    raw.execute("DELETE FROM wrepl_events WHERE session = 'u' AND seq = 9", &[]).unwrap();
    let e = store.append_leased("u", "owner-u", &[(5, begin("c"))]).unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
    assert!(!store.verify("u").unwrap().ok);
    // Another writer's append moves the head: this writer's next append re-reads it.
    store.acquire_lease("v", &me, Duration::from_secs(10)).unwrap();
    store.append_leased("v", "owner-u", &[(0, begin("x"))]).unwrap();
    other.append("v", &[(0, Event::Now { us: 2.0 })]).unwrap();
    store.append_leased("v", "owner-u", &[(1, begin("y"))]).unwrap();
    assert!(store.verify("v").unwrap().ok);
    assert_eq!(store.head("v").unwrap().unwrap().events, 3);
}

#[test]
fn a_bad_url_is_a_clear_error() {
    let e = PostgresStore::open("postgres://nobody:pw@127.0.0.1:1/x").unwrap_err().to_string();
    assert!(e.contains("postgres") && !e.contains("pw@") && e.contains("refused"), "{e}");
    let e = PostgresStore::open("postgres://u@/x?host=/tmp&sslmode=verify-full").unwrap_err().to_string();
    assert!(e.contains("unix sockets, which never use TLS"), "{e}");
    let e = PostgresStore::open("postgres://u@db/x?sslmode=require&sslcert=/c.pem").unwrap_err().to_string();
    assert!(e.contains("sslcert is not supported"), "{e}");
}

#[tokio::test]
async fn the_cli_resumes_a_session_kept_in_postgres() {
    let Some(url) = fresh_db() else { return };
    let dir = tempfile::tempdir().unwrap();
    let run = |code: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_wrepl"))
            .args(["eval", "--root"])
            .arg(dir.path())
            .args(["--store", &url, "--session", "pg", "-e", code])
            .output()
            .unwrap()
    };
    assert!(run("let x = 41").status.success());
    let out = run("x + 1");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42", "{}", String::from_utf8_lossy(&out.stderr));
}

async fn instance(dir: &Path, url: &str) -> HttpServer {
    let tokens = dir.join("tokens");
    let args = ["--token-file", tokens.to_str().unwrap(), "--store", url];
    spawn_http(dir, "127.0.0.1:0", &args, &[]).await.expect("wrepl serve --http --store postgres://")
}

/// Two instances sharing the database at `url`, with a 2026-07-28 client
/// of each (approving with `word`).
async fn two_instances(
    dir: &Path,
    url: &str,
    word: &'static str,
) -> ((HttpServer, RunningService<RoleClient, TestClient>), (HttpServer, RunningService<RoleClient, TestClient>)) {
    let a = instance(dir, url).await;
    let b = instance(dir, url).await;
    let token = super::mcp_modern::token(dir);
    let ca = modern(modern_client(true, word), http_transport(&a.url, &token)).await;
    let cb = modern(modern_client(true, word), http_transport(&b.url, &token)).await;
    ((a, ca), (b, cb))
}

#[tokio::test]
async fn two_servers_sharing_postgres_serve_one_context_in_turn() {
    let Some(url) = fresh_db() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ((mut a, ca), (mut b, cb)) = two_instances(dir.path(), &url, "double").await;

    // State: set on A, read on B.
    let r = call(&ca, "repl", json!({"code": "let x = 41"})).await;
    let handle = structured(&r)["context"].as_str().unwrap().to_string();
    let r = call(&cb, "repl", json!({"code": "x + 1", "context": handle})).await;
    assert_eq!(structured(&r)["result"], json!(42), "{r:?}");
    assert!(!text(&r).contains("session restored"), "a rebuild between calls is not news: {}", text(&r));

    // A tool registered on A is called on B (its approval answered through B's rounds).
    let r = call(
        &ca,
        "repl",
        json!({"code": "registerTool('double', 'Doubles n', {type: 'object', properties: {n: {type: 'number'}}}, ({n}) => n * 2)", "context": handle}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let r = call(&cb, "eval_registered__double", json!({"n": 21, "context": handle})).await;
    assert_eq!(structured(&r)["result"], json!(42), "{r:?}");

    // A model sample asked by A (an input_required round) is answered on B.
    let code = "x + (await haiku('two')).length";
    let first = super::mcp_modern::input_required(
        super::mcp_modern::once(&ca, "repl", json!({"code": code, "context": handle}), None).await,
    );
    let (key, _) = first.input_requests.clone().unwrap().into_iter().next().unwrap();
    let answer: std::collections::BTreeMap<String, Value> = [(
        key,
        json!({"role": "assistant", "content": {"type": "text", "text": "a"}, "model": "m", "stopReason": "endTurn"}),
    )]
    .into_iter()
    .collect();
    let state = first.request_state.unwrap();
    let r = super::mcp_modern::complete(
        super::mcp_modern::once(&cb, "repl", json!({"code": code, "context": handle}), Some((answer, state))).await,
    );
    assert_eq!(structured(&r)["result"], json!(42), "{r:?}");

    // Concurrent calls for the one context on A and B never interleave: the lease holds.
    let slow =
        json!({"code": "x = x + 1; await new Promise(r => setTimeout(r, 1500)); x = x * 10; x", "context": handle});
    let quick = json!({"code": "x = x + 5; x", "context": handle});
    let (ra, rb) = tokio::join!(call(&ca, "repl", slow), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        call(&cb, "repl", quick).await
    });
    let (va, vb): (Value, Value) = (structured(&ra)["result"].clone(), structured(&rb)["result"].clone());
    assert!(
        (va == json!(420) && vb == json!(425)) || (va == json!(470) && vb == json!(46)),
        "the calls interleaved: A gave {va}, B gave {vb}"
    );
    drop(ca);
    drop(cb);
    a.child.kill().await.unwrap();
    b.child.kill().await.unwrap();
    // Every session of the database still verifies.
    let store = Arc::new(PostgresStore::open(&url).unwrap());
    for s in store.sessions().unwrap() {
        assert!(store.verify(&s.name).unwrap().ok, "{}", s.name);
    }
}

/// On a shared store an instance gives a context's lease back after every
/// call; it snapshots the context first only when replaying the blocks since
/// its newest snapshot would cost more than the session allows (about
/// 20 ms), not after every call: cheap calls leave no snapshot, a costly
/// one leaves one, and the other instance continues from it.
#[tokio::test]
async fn a_shared_context_is_snapshotted_when_replay_would_cost_not_after_every_call() {
    let Some(url) = fresh_db() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ((mut a, ca), (mut b, cb)) = two_instances(dir.path(), &url, "x").await;
    let r = call(&ca, "repl", json!({"code": "let n = 0"})).await;
    let handle = structured(&r)["context"].as_str().unwrap().to_string();
    // Ten trivial calls cost about 2 ms of replay, a tenth of the 20 ms that makes a snapshot due.
    for _ in 0..10 {
        let r = call(&ca, "repl", json!({"code": "n += 1", "context": handle})).await;
        assert_ne!(r.is_error, Some(true), "{r:?}");
    }
    let store = Arc::new(PostgresStore::open(&url).unwrap());
    let sessions = store.sessions().unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let session = sessions[0].name.clone();
    assert!(store.snapshots(&session).unwrap().is_empty(), "11 cheap calls, no snapshot");
    // A call that computes for well over 20 ms (about 175 ms here): its state is snapshotted.
    let heavy = "let s = 0; for (let i = 0; i < 3e6; i++) s += i % 7; n += 1";
    let r = call(&ca, "repl", json!({"code": heavy, "context": handle})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let snaps = store.snapshots(&session).unwrap();
    assert_eq!(snaps.len(), 1, "{snaps:?}");
    assert_eq!(snaps[0].block, 11, "the snapshot holds the state after the costly call (block 11)");
    // The other instance continues from it.
    let r = call(&cb, "repl", json!({"code": "n", "context": handle})).await;
    assert_eq!(structured(&r)["result"], json!(11), "{r:?}");
    drop(ca);
    drop(cb);
    a.child.kill().await.unwrap();
    b.child.kill().await.unwrap();
    assert!(store.verify(&session).unwrap().ok);
}

fn wrepl(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wrepl")).args(args).output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[tokio::test]
async fn store_commands_move_verify_and_collect_sessions_between_backends() {
    let Some(url) = fresh_db() else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.sqlite3");
    let file = file.to_str().unwrap();
    let root = dir.path().to_str().unwrap();
    for (session, code) in [("one", "let a = 1"), ("two", "let b = 2")] {
        let (ok, out) = wrepl(&["eval", "--root", root, "--store", file, "--session", session, "-e", code]);
        assert!(ok, "{out}");
    }
    let (ok, out) = wrepl(&["store", "migrate", "--store", &url]);
    assert!(ok && out.contains("store ready"), "{out}");
    let (ok, out) = wrepl(&["store", "copy", file, "--store", &url]);
    assert!(ok && out.contains("2 copied"), "{out}");
    // Copying again leaves them alone.
    let (ok, out) = wrepl(&["store", "copy", file, "--store", &url]);
    assert!(ok && out.contains("0 copied, 2 already there"), "{out}");
    let (ok, out) = wrepl(&["store", "verify", "--store", &url]);
    assert!(ok && out.contains("2 session(s) verified, 0 broken"), "{out}");
    // The copied session continues in PostgreSQL.
    let (ok, out) = wrepl(&["eval", "--root", root, "--store", &url, "--session", "one", "-e", "a + 41"]);
    assert!(ok && out.contains("42"), "{out}");
    // gc: nothing is older than a day; everything is older than 0 s.
    let (ok, out) = wrepl(&["store", "gc", "--older-than", "1d", "--store", &url]);
    assert!(ok && out.contains("0 session(s) removed"), "{out}");
    let (ok, out) = wrepl(&["store", "gc", "--older-than", "0s", "--dry-run", "--store", &url]);
    assert!(ok && out.contains("would remove one") && out.contains("would remove two"), "{out}");
    let (ok, out) = wrepl(&["store", "gc", "--older-than", "0s", "--store", file]);
    assert!(ok && out.contains("2 session(s) removed"), "{out}");
    let (_, out) = wrepl(&["log", "list", "--store", file]);
    assert!(!out.contains("one"), "{out}");
}

#[tokio::test]
async fn health_and_readiness_answer_without_a_token() {
    let Some(url) = fresh_db() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut s = instance(dir.path(), &url).await;
    for (path, want) in [("/healthz", "ok"), ("/readyz", "ready")] {
        let (status, body) = super::mcp_modern::raw_http(
            &s.addr,
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(want), "{body}");
    }
    // The MCP endpoint itself still wants the token.
    let (status, _) = super::mcp_modern::raw_http(
        &s.addr,
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".to_string(),
    )
    .await;
    assert_eq!(status, 401);
    s.child.kill().await.unwrap();
}

/// Three servers on one database; a seeded loop SIGKILLs one of them during
/// evaluations with side effects (lines appended to a file, one per call)
/// and restarts it; the next call may land on any of them. CI: 30 kills
/// (`WREPL_LONG=1`: 100).
#[tokio::test]
async fn a_fleet_survives_kills_without_repeating_or_losing_a_completed_call() {
    use super::resilience::{long_mode, Rng};
    let Some(url) = fresh_db() else { return };
    let kills = if long_mode() { 100 } else { 30 };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    let tokens = dir.path().join("tokens");
    let start = |root: std::path::PathBuf, tokens: std::path::PathBuf, url: String| async move {
        let args = ["--token-file", tokens.to_str().unwrap(), "--store", &url, "--allow", "Bash"];
        spawn_http(&root, "127.0.0.1:0", &args, &[]).await.expect("wrepl serve --http")
    };
    let mut servers = Vec::new();
    for _ in 0..3 {
        servers.push(start(root.clone(), tokens.clone(), url.clone()).await);
    }
    let token = std::fs::read_to_string(&tokens).unwrap();
    let token = token.lines().find(|l| !l.trim().is_empty() && !l.starts_with('#')).unwrap().trim().to_string();
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let c = modern(modern_client(true, "x"), http_transport(&servers[0].url, &token)).await;
    let r = call(&c, "repl", json!({"code": "var done = []"})).await;
    let handle = structured(&r)["context"].as_str().unwrap().to_string();
    drop(c);
    let (mut finished, mut unknown, mut n) = (Vec::new(), 0usize, 0usize);
    for _ in 0..kills {
        // A few calls on random servers, then one whose server is killed.
        let complete = rng.below(3);
        for j in 0..=complete {
            let at = rng.below(3) as usize;
            let c = modern(modern_client(true, "x"), http_transport(&servers[at].url, &token)).await;
            let i = n;
            n += 1;
            let code = format!(
                "await sh('echo e{i}-a >> effects.log'); await sh('sleep 0.0{d}; echo e{i}-b >> effects.log'); \
                 done.push({i}); {i}",
                d = rng.below(5)
            );
            let request = json!({"code": code, "context": handle});
            if j < complete {
                let r = call(&c, "repl", request).await;
                assert_eq!(structured(&r)["result"], json!(i), "{r:?}");
                unknown += structured(&r)["replay"]["blocks"]
                    .as_array()
                    .map_or(0, |b| b.iter().map(|b| b["outcome_unknown"].as_array().map_or(0, Vec::len)).sum());
                finished.push(i);
                continue;
            }
            let delay = Duration::from_millis(rng.below(80));
            tokio::select! {
                _ = call(&c, "repl", request) => {}
                _ = tokio::time::sleep(delay) => {}
            }
            servers[at].child.kill().await.unwrap();
            servers[at] = start(root.clone(), tokens.clone(), url.clone()).await;
        }
    }
    // The context, on any server: every completed call's push is there once.
    let c = modern(modern_client(true, "x"), http_transport(&servers[1].url, &token)).await;
    let r = call(&c, "repl", json!({"code": "done", "context": handle})).await;
    let done: Vec<usize> = serde_json::from_value(structured(&r)["result"].clone()).expect("a list");
    for i in &finished {
        assert_eq!(done.iter().filter(|d| *d == i).count(), 1, "call {i} in {done:?}");
    }
    // Every effect happened at most once; every completed call's effects exactly once.
    let log = std::fs::read_to_string(root.join("effects.log")).unwrap_or_default();
    let mut counts = std::collections::HashMap::new();
    for line in log.lines() {
        *counts.entry(line.to_string()).or_insert(0usize) += 1;
    }
    for (line, k) in &counts {
        assert_eq!(*k, 1, "{line} happened {k} times");
    }
    for i in &finished {
        assert!(counts.contains_key(&format!("e{i}-a")) && counts.contains_key(&format!("e{i}-b")), "e{i}");
    }
    drop(c);
    // No lease is held once the calls are done; the logs verify.
    let url2 = url.clone();
    let leases: i64 = std::thread::spawn(move || {
        let mut raw = postgres::Client::connect(&url2, postgres::NoTls).unwrap();
        raw.query_one("SELECT COUNT(*) FROM wrepl_leases", &[]).unwrap().get(0)
    })
    .join()
    .unwrap();
    assert_eq!(leases, 0, "a lease outlived its call");
    let (ok, out) = wrepl(&["store", "verify", "--store", &url]);
    assert!(ok, "{out}");
    eprintln!(
        "fleet chaos: {kills} kills, {} calls completed, {unknown} outcome_unknown seen on resume, {} effects",
        finished.len(),
        counts.len()
    );
    for s in &mut servers {
        s.child.kill().await.unwrap();
    }
}

/// `scripts/pg-cluster.sh CMD DIR [ARGS]`; its output.
fn pg_cluster(cmd: &str, dir: &Path) -> String {
    pg_cluster_with(cmd, dir, &[])
}

fn pg_cluster_with(cmd: &str, dir: &Path, args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-cluster.sh");
    let out = std::process::Command::new("bash").arg(script).arg(cmd).arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "pg-cluster.sh {cmd}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn the_store_connects_again_after_the_server_restarts() {
    // A cluster of its own: this test stops it.
    if cluster().is_none() {
        return;
    }
    let dir = tempfile::Builder::new().prefix("wrepl-pg-restart").tempdir_in("/tmp").unwrap();
    let url = pg_cluster("start", dir.path());
    let store = PostgresStore::open(&url).unwrap();
    store.append("r", &[(0, begin("a"))]).unwrap();
    pg_cluster("stop", dir.path());
    let e = store.append("r", &[(0, Event::Now { us: 1.0 })]).unwrap_err();
    assert!(e.to_string().starts_with("postgres:"), "a clear error while the server is down: {e}");
    pg_cluster("resume", dir.path());
    // The failed append found its connection closed, so every connection
    // is checked before its next job and opened again: nothing fails now.
    store.append("r", &[(1, begin("b"))]).unwrap();
    assert!(store.verify("r").unwrap().ok);
    assert_eq!(store.head("r").unwrap().unwrap().events, 2, "the failed append wrote nothing");
    pg_cluster("stop", dir.path());
}

#[test]
fn tls_is_used_as_the_url_asks_and_the_certificate_is_always_verified() {
    // A cluster of its own that accepts only TLS on 127.0.0.1, with a
    // certificate for "localhost" from a CA made for the test.
    if cluster().is_none() {
        return;
    }
    let dir = tempfile::Builder::new().prefix("wrepl-pg-tls").tempdir_in("/tmp").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let url = pg_cluster_with("start-tls", dir.path(), &[&port]);
    let ca = dir.path().join("ca.pem");
    let other_ca = dir.path().join("other-ca.pem");
    let open = |query: String| PostgresStore::open(&format!("{url}?{query}"));
    let works = |query: String| {
        let store = open(query.clone()).unwrap_or_else(|e| panic!("{query}: {e}"));
        let name = format!("tls-{}", query.len());
        store.append(&name, &[(0, begin("a"))]).unwrap();
        assert!(store.verify(&name).unwrap().ok);
    };
    // The server refuses connections without TLS, so each of these that
    // works used TLS.
    works(format!("sslmode=verify-full&sslrootcert={}", ca.display()));
    works(format!("sslmode=require&sslrootcert={}", ca.display()));
    works(format!("sslrootcert={}", ca.display()));
    let plain = open("sslmode=disable".into()).unwrap_err().to_string();
    assert!(plain.contains("no encryption"), "the server refuses plain connections: {plain}");

    // The certificate must chain to the roots: the system's, or the file's.
    for query in ["sslmode=require".to_string(), format!("sslmode=verify-ca&sslrootcert={}", other_ca.display())] {
        let e = open(query.clone()).unwrap_err().to_string();
        assert!(e.contains("UnknownIssuer") && e.contains("sslrootcert=FILE"), "{query}: {e}");
    }
    // verify-full checks the name; verify-ca does not.
    let by_ip = url.replace("localhost", "127.0.0.1");
    let e = PostgresStore::open(&format!("{by_ip}?sslmode=verify-full&sslrootcert={}", ca.display()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not valid for name"), "a certificate for localhost is not one for 127.0.0.1: {e}");
    let store = PostgresStore::open(&format!("{by_ip}?sslmode=verify-ca&sslrootcert={}", ca.display())).unwrap();
    assert!(store.head("tls-nothing").unwrap().is_none());
    pg_cluster("stop", dir.path());
}
